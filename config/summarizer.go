package config

// Summarizer configures the summarizer stage. Owned by the summarizer code; fields are added here with their defaults.
type Summarizer struct{}

// DefaultSummarizer returns the built-in summarizer settings.
func DefaultSummarizer() Summarizer { return Summarizer{} }

// Validate reports invalid summarizer settings, naming each key.
func (c Summarizer) Validate() error { return nil }
