package config

// Tracker configures the tracker stage. Owned by the tracker code; fields are added here with their defaults.
type Tracker struct{}

// DefaultTracker returns the built-in tracker settings.
func DefaultTracker() Tracker { return Tracker{} }

// Validate reports invalid tracker settings, naming each key.
func (c Tracker) Validate() error { return nil }
