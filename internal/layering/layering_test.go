package layering

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/tracksum/tracksum"

// layers lists the layers bottom up, each with the packages it holds: "p" places p and the
// packages below it in the tree, "p=" places p alone; the longest match wins. A package may import
// packages of its own layer and of the layers under it, never one above. The same order is drawn in
// docs/architecture.md; change both together.
var layers = []struct {
	name     string
	packages []string
}{
	{"plumbing", []string{"internal/atomicio", "internal/progress", "internal/golden",
		"internal/tensorio", "internal/layering", "internal/knowncrash", "internal/testlog", "textmetrics", "subword", "llm", "hf/family", "hf/quant", "layers",
		"eval/stats", "eval/report", "model/decode"}},
	{"config", []string{"config"}},
	{"data and sources", []string{"dataset", "internal/cli", "hf/snapshot", "hf/tokenizer", "hf/chattemplate"}},
	{"backbones", []string{"model=", "hf/peft", "hf/weights", "hf/decoder", "hf/encoder", "hf/plan", "hf/randsnap"}},
	{"tasks, judges and data preparation", []string{"model", "dataset/prepare", "eval/judge", "eval/facet",
		"eval/qaeval", "infer/ground", "infer/llmmethods"}},
	{"applications", []string{"infer", "eval", "serve", "export", "train"}},
	{"experiments", []string{"experiment"}},
	{"commands and tools", []string{"cmd", "tools", "scripts"}},
}

// apart lists pairs of package trees that may not import each other's way although the layers
// allow it: the Hugging Face side (data sources, backbones) is written against snapshots and knows
// nothing of tracksum's models, whose root package ("model": backend, variables) shares the
// backbones' layer. An application built on both (export) lives at the application layer.
var apart = []struct{ from, to string }{
	{"hf", "model"},
}

// under reports whether pkg is tree or a package below it.
func under(pkg, tree string) bool { return pkg == tree || strings.HasPrefix(pkg, tree+"/") }

// layerOf returns the index in layers of a package path relative to the module, or -1.
func layerOf(pkg string) int {
	best, bestLen := -1, -1
	for i, l := range layers {
		for _, p := range l.packages {
			exact := strings.HasSuffix(p, "=")
			p = strings.TrimSuffix(p, "=")
			ok := pkg == p || (!exact && strings.HasPrefix(pkg, p+"/"))
			if ok && len(p) > bestLen {
				best, bestLen = i, len(p)
			}
		}
	}
	return best
}

// imports maps each package directory of the module (relative, slash-separated) to the module
// packages its non-test files import. Test files may reach up (a test of a backbone may drive the
// model built on it); the code may not.
func imports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		if _, ok := out[pkg]; !ok {
			out[pkg] = nil
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if after, ok := strings.CutPrefix(p, module+"/"); ok && !slices.Contains(out[pkg], after) {
				out[pkg] = append(out[pkg], after)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestImportsRunOneWay(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module root is not two levels up: %v", err)
	}
	pkgs := imports(t, root)
	if len(pkgs) < 20 {
		t.Fatalf("found %d packages: the walk is broken", len(pkgs))
	}
	var problems []string
	for pkg, deps := range pkgs {
		l := layerOf(pkg)
		if l < 0 {
			problems = append(problems, fmt.Sprintf("%s has no layer: place it in layers (internal/layering) and docs/architecture.md", pkg))
			continue
		}
		for _, d := range deps {
			if dl := layerOf(d); dl > l {
				problems = append(problems, fmt.Sprintf("%s (%s) imports %s (%s), a layer above it", pkg, layers[l].name, d, layers[dl].name))
			}
			for _, a := range apart {
				if under(pkg, a.from) && under(d, a.to) {
					problems = append(problems, fmt.Sprintf("%s imports %s: nothing in %s/ imports %s or a package below it", pkg, d, a.from, a.to))
				}
			}
		}
	}
	slices.Sort(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

// The rule itself: longest match, exact entries, unknown packages.
func TestLayerOf(t *testing.T) {
	tests := []struct {
		pkg  string
		want string
	}{
		{"model", "backbones"},
		{"model/pretrained", "tasks, judges and data preparation"},
		{"model/tracker", "tasks, judges and data preparation"},
		{"model/summarizer", "tasks, judges and data preparation"},
		{"model/stt", "tasks, judges and data preparation"},
		{"model/ete", "tasks, judges and data preparation"},
		{"hf/encoder", "backbones"},
		{"hf/decoder/layout", "backbones"},
		{"hf/tokenizer", "data and sources"},
		{"experiment/cv", "experiments"},
		{"hf/decoder", "backbones"},
		{"hf/snapshot", "data and sources"},
		{"export", "applications"},
		{"model/decode", "plumbing"},
		{"eval", "applications"},
		{"eval/judge/llmtest", "tasks, judges and data preparation"},
		{"internal/cli", "data and sources"},
		{"cmd/train", "commands and tools"},
	}
	for _, tt := range tests {
		l := layerOf(tt.pkg)
		if l < 0 || layers[l].name != tt.want {
			t.Errorf("layerOf(%q) = %d, want %s", tt.pkg, l, tt.want)
		}
	}
	if l := layerOf("somewhere/new"); l != -1 {
		t.Errorf("an unplaced package got layer %d", l)
	}
}
