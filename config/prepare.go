package config

// Prepare configures the prepare stage. Owned by the prepare code; fields are added here with their defaults.
type Prepare struct{}

// DefaultPrepare returns the built-in prepare settings.
func DefaultPrepare() Prepare { return Prepare{} }

// Validate reports invalid prepare settings, naming each key.
func (c Prepare) Validate() error { return nil }
