package prepare

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tracksum/tracksum/dataset"
)

// TestDatasetCard: the prepared directory carries a dataset card whose YAML header points each
// task (config) and split at its shards, named <split>-NNNNN-of-MMMMM.parquet as Hugging Face
// datasets names them, and whose column tables list every column of the row types.
func TestDatasetCard(t *testing.T) {
	out := filepath.Join(t.TempDir(), "prepared")
	run(t, testConfig(), nil, out)
	b, err := os.ReadFile(filepath.Join(out, dataset.CardFile))
	if err != nil {
		t.Fatal(err)
	}
	card := string(b)
	m, err := dataset.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range dataset.Tasks {
		if !strings.Contains(card, "- config_name: "+task+"\n") {
			t.Errorf("card lacks config %s", task)
		}
		for _, c := range dataset.Columns(task) {
			if !strings.Contains(card, "| `"+c.Name+"` | "+c.Type+" |") {
				t.Errorf("card lacks %s column %s (%s)", task, c.Name, c.Type)
			}
		}
		for _, split := range dataset.Splits {
			sh := m.Tasks[task].Splits[split].Shards
			for i, s := range sh {
				want := fmt.Sprintf("%s/%s-%05d-of-%05d.parquet", task, split, i, len(sh))
				if s.Path != want {
					t.Errorf("shard %s, want %s", s.Path, want)
				}
				if ok, _ := filepath.Match(filepath.Join(out, task, split+"-*.parquet"), filepath.Join(out, s.Path)); !ok {
					t.Errorf("shard %s is not matched by the card's glob", s.Path)
				}
			}
			if len(sh) > 0 && !strings.Contains(card, "  - split: "+split+"\n    path: "+task+"/"+split+"-*.parquet\n") {
				t.Errorf("card lacks %s/%s data_files", task, split)
			}
		}
	}
	if !strings.Contains(card, "built-in synthetic sample") {
		t.Error("card does not say where the data comes from")
	}
}

// TestShardsReadByDuckDB reads the prepared shards with DuckDB (tools/parquetcheck/check.mjs), a
// Parquet reader independent of parquet-go, through the dataset card's globs: rows, positives and
// column names and types must be what manifest.json and the card say. It needs node and
// tools/parquetcheck/fetch.sh (CI runs it).
func TestShardsReadByDuckDB(t *testing.T) {
	tool := filepath.Join("..", "..", "tools", "parquetcheck")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the DuckDB shard check needs it")
	}
	if _, err := os.Stat(filepath.Join(tool, "node_modules", "@duckdb", "node-api", "package.json")); err != nil {
		t.Skipf("DuckDB's node client is absent: run %s", filepath.Join(tool, "fetch.sh"))
	}
	out := filepath.Join(t.TempDir(), "prepared")
	cfg := testConfig()
	cfg.Prepare.RowsPerShard = 200 // several shards per split: the -of- names and the globs matter
	run(t, cfg, nil, out)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := exec.CommandContext(ctx, node, filepath.Join(tool, "check.mjs"), out).CombinedOutput()
	t.Logf("%s", b)
	if err != nil {
		t.Fatalf("DuckDB check: %v", err)
	}
}

// TestColumnsDocumented: docs/prepare.md lists every column of every task with its type.
func TestColumnsDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "prepare.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range dataset.Tasks {
		for _, c := range dataset.Columns(task) {
			if !strings.Contains(string(b), "| `"+c.Name+"` | "+c.Type+" |") {
				t.Errorf("docs/prepare.md lacks %s column %s (%s)", task, c.Name, c.Type)
			}
		}
	}
}
