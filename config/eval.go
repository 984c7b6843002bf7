package config

// Eval configures the eval stage. Owned by the eval code; fields are added here with their defaults.
type Eval struct{}

// DefaultEval returns the built-in eval settings.
func DefaultEval() Eval { return Eval{} }

// Validate reports invalid eval settings, naming each key.
func (c Eval) Validate() error { return nil }
