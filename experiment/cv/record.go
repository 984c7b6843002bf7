package cv

import (
	"fmt"
	"slices"

	"github.com/tracksum/tracksum/config"
	"go.yaml.in/yaml/v3"
)

// configRecord is the configuration a settings record (CK/cv-settings.json) hashes and writes to
// CK/config.yaml.
type configRecord struct {
	// YAML is the record of this build.
	YAML []byte
	// Legacy is the record an earlier build wrote for the same run (nil: none): a directory
	// holding it is accepted, and its record rewritten as YAML.
	Legacy []byte
}

// recordedSections are the top-level config keys every model's record holds besides its own
// section: the seed, and the prepare and tokenizer settings behind the prepared directory.
var recordedSections = []string{"seed", "prepare", "tokenizer"}

// modelRecord is the record of a cross-validation of one model (section "tracker" or
// "summarizer"): cfg's YAML restricted to recordedSections and that section, so that neither a
// change of another section nor a new built-in default of one in a later release refuses a
// finished cross-validation (an earlier build recorded the other sections at their defaults:
// changing a summarizer default made every finished tracker cross-validation unusable). legacy is
// the configuration that earlier build recorded (onlySection's).
func modelRecord(cfg *config.Config, section string, legacy *config.Config) (configRecord, error) {
	y, err := sectionsYAML(cfg, append(slices.Clone(recordedSections), section)...)
	if err != nil {
		return configRecord{}, err
	}
	old, err := sectionsYAML(legacy)
	if err != nil {
		return configRecord{}, err
	}
	return configRecord{YAML: y, Legacy: old}, nil
}

// sectionsYAML renders cfg as YAML with only the top-level keys named (all when none is), in
// cfg's order, without the keys that change nothing trained (config.Unrecorded).
func sectionsYAML(cfg *config.Config, keys ...string) ([]byte, error) {
	full, err := cfg.YAML()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(full, &doc); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("config: the rendered configuration is not a mapping")
	}
	m := doc.Content[0]
	var kept []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if len(keys) == 0 || slices.Contains(keys, m.Content[i].Value) {
			kept = append(kept, m.Content[i], m.Content[i+1])
		}
	}
	m.Content = kept
	dropUnrecorded(m, "")
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return out, nil
}

// dropUnrecorded removes from a YAML mapping the keys that change nothing a cross-validation
// trains (config.Unrecorded, config.FromScratchUnread: a cross-validation trains the from-scratch
// models), at any depth; prefix is the mapping's dotted key. Records written before such a key
// existed stay valid.
func dropUnrecorded(m *yaml.Node, prefix string) {
	var kept []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		key := m.Content[i].Value
		if prefix != "" {
			key = prefix + "." + key
		}
		if config.Unrecorded(key) || config.FromScratchUnread(key) {
			continue
		}
		if m.Content[i+1].Kind == yaml.MappingNode {
			dropUnrecorded(m.Content[i+1], key)
		}
		kept = append(kept, m.Content[i], m.Content[i+1])
	}
	m.Content = kept
}
