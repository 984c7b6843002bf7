package family

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocsNameEveryFamily: README.md and docs/pretrained.md name every registered family by its
// model_type, so the docs cannot fall behind the registry (issue 37 item 5: they once said four
// families while eight were registered).
func TestDocsNameEveryFamily(t *testing.T) {
	for _, doc := range []string{"README.md", filepath.Join("docs", "pretrained.md")} {
		b, err := os.ReadFile(filepath.Join("..", "..", doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []Kind{CausalLM, Encoder} {
			for _, name := range Names(k) {
				if !strings.Contains(string(b), "`"+name+"`") {
					t.Errorf("%s does not name the registered %s family `%s`", doc, k, name)
				}
			}
		}
	}
}
