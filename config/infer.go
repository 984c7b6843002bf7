package config

// Infer configures the infer stage. Owned by the infer code; fields are added here with their defaults.
type Infer struct{}

// DefaultInfer returns the built-in infer settings.
func DefaultInfer() Infer { return Infer{} }

// Validate reports invalid infer settings, naming each key.
func (c Infer) Validate() error { return nil }
