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
	old, err := legacy.YAML()
	if err != nil {
		return configRecord{}, fmt.Errorf("config: %w", err)
	}
	return configRecord{YAML: y, Legacy: old}, nil
}

// sectionsYAML renders cfg as YAML with only the top-level keys named, in cfg's order.
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
		if slices.Contains(keys, m.Content[i].Value) {
			dropPretrainedCompute(m.Content[i+1])
			kept = append(kept, m.Content[i], m.Content[i+1])
		}
	}
	m.Content = kept
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return out, nil
}

// pretrainedComputeKeys are the train keys of a section that only the pretrained models read
// (train.precision, train.gradient_checkpointing): a cross-validation trains the from-scratch
// models, on which they change nothing, so its records leave them out, and the records written
// before they existed stay valid.
var pretrainedComputeKeys = []string{"precision", "gradient_checkpointing"}

// dropPretrainedCompute removes pretrainedComputeKeys from the train mapping of section, a
// section's YAML mapping (other nodes are left as they are).
func dropPretrainedCompute(section *yaml.Node) {
	if section.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(section.Content); i += 2 {
		train := section.Content[i+1]
		if section.Content[i].Value != "train" || train.Kind != yaml.MappingNode {
			continue
		}
		var kept []*yaml.Node
		for j := 0; j+1 < len(train.Content); j += 2 {
			if !slices.Contains(pretrainedComputeKeys, train.Content[j].Value) {
				kept = append(kept, train.Content[j], train.Content[j+1])
			}
		}
		train.Content = kept
	}
}
