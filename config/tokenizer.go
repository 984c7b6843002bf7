package config

// Tokenizer configures the tokenizer stage. Owned by the tokenizer code; fields are added here with their defaults.
type Tokenizer struct{}

// DefaultTokenizer returns the built-in tokenizer settings.
func DefaultTokenizer() Tokenizer { return Tokenizer{} }

// Validate reports invalid tokenizer settings, naming each key.
func (c Tokenizer) Validate() error { return nil }
