package pretrained

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/model/checkpoint"
)

// jsonKeys returns every object key of a JSON value, at any depth, as "path.key".
func jsonKeys(prefix string, v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			out = append(out, prefix+k)
			out = append(out, jsonKeys(prefix+k+".", x)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, jsonKeys(prefix, x)...)
		}
	}
	return out
}

// TestMetaSnakeCaseKeys: issue 23 item 8. pretrained.json's adapter settings had Go's default keys
// (Rank, Alpha, RSLoRA, TargetModules) where every other file is snake_case. They are now written
// as config.yaml names them (rank, alpha, rslora, dropout, target_modules), and a checkpoint
// written with the old keys (testdata/old-keys) still reads the same, so it loads and resumes.
func TestMetaSnakeCaseKeys(t *testing.T) {
	old, err := ReadMeta(filepath.Join("testdata", "old-keys"))
	if err != nil {
		t.Fatal(err)
	}
	want := config.LoRA{Rank: 8, Alpha: 16, RSLoRA: true, Dropout: 0.05, TargetModules: []string{"q_proj", "v_proj"}}
	if !reflect.DeepEqual(old.LoRA, want) {
		t.Fatalf("old-key pretrained.json: lora %+v, want %+v", old.LoRA, want)
	}

	dir := t.TempDir()
	if err := checkpoint.WriteJSON(filepath.Join(dir, checkpoint.PretrainedFile), old); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, checkpoint.PretrainedFile))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	snake := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	for _, k := range jsonKeys("", raw) {
		if !snake.MatchString(k[strings.LastIndexByte(k, '.')+1:]) {
			t.Errorf("pretrained.json key %s is not snake_case", k)
		}
	}
	lora, _ := raw["lora"].(map[string]any)
	var keys []string
	for k := range lora {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if wantKeys := []string{"alpha", "dropout", "rank", "rslora", "target_modules"}; !slices.Equal(keys, wantKeys) {
		t.Errorf("lora keys %v, want %v", keys, wantKeys)
	}
	again, err := ReadMeta(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, old) {
		t.Errorf("rewritten pretrained.json reads %+v, want %+v", again, old)
	}

	// Unknown keys stay errors, old or new spelling aside.
	bad := strings.Replace(string(b), `"rank"`, `"rnak"`, 1)
	if err := os.WriteFile(filepath.Join(dir, checkpoint.PretrainedFile), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadMeta(dir); err == nil || !strings.Contains(err.Error(), "rnak") {
		t.Errorf("pretrained.json with lora key rnak: error %v, want one naming it", err)
	}
}
