package eval

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEmptyFilesAreAnError is the regression test of issue 10 item 14: an eval with both files
// empty exited 0.
func TestEmptyFilesAreAnError(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.jsonl")
	if err := os.WriteFile(empty, []byte("\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), Options{Pred: empty, Ref: empty, Config: testConfig()})
	if !errors.Is(err, ErrNoInstances) || !strings.Contains(err.Error(), empty) {
		t.Fatalf("err = %v, want ErrNoInstances naming %s", err, empty)
	}
	if _, err := Join(nil, nil, true); !errors.Is(err, ErrNoInstances) {
		t.Errorf("Join with no references: err = %v, want ErrNoInstances", err)
	}
}

// TestOutDirHoldsAnInput is eval's part of the regression test of issue 10 item 3: --out is
// replaced as a whole, so an --out that holds (or is) --pred or --ref is refused before any work
// and the input survives.
func TestOutDirHoldsAnInput(t *testing.T) {
	pred, err := os.ReadFile("testdata/pred.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc string
		out  func(dir, pred string) string
		want string
	}{
		{"pred inside --out", func(dir, _ string) string { return dir }, "--pred " + "%s is inside --out"},
		{"pred is report.json of --out", func(dir, _ string) string { return dir }, "is inside --out"},
		{"--out is the pred file", func(_, pred string) string { return pred }, "is the same file as --pred"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			name := "pred.jsonl"
			if strings.Contains(tc.desc, "report.json") {
				name = "report.json"
			}
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, pred, 0o644); err != nil {
				t.Fatal(err)
			}
			want := strings.ReplaceAll(tc.want, "%s", p)
			_, err := Run(context.Background(), Options{Pred: p, Ref: "testdata/ref.jsonl", Out: tc.out(dir, p), Config: testConfig()})
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v\nwant one containing %q", err, want)
			}
			if b, _ := os.ReadFile(p); string(b) != string(pred) {
				t.Fatal("the prediction file was modified")
			}
		})
	}
}

// TestCompareOutIsAnInput covers `eval compare --out` and `eval agreement --out` for issue 10
// item 3: the JSON output may not replace one of the files it reads.
func TestCompareOutIsAnInput(t *testing.T) {
	pred, err := os.ReadFile("testdata/pred.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(t.TempDir(), "a.jsonl")
	if err := os.WriteFile(a, pred, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc string
		cmd  func() (args []string, run func([]string) error)
		want string
	}{
		{"compare --out A", func() ([]string, func([]string) error) {
			c := CompareCommand()
			return []string{a, "testdata/pred.jsonl", "--ref", "testdata/ref.jsonl", "--out", a}, func(args []string) error {
				if err := c.Flags.Parse(args); err != nil {
					return err
				}
				return c.Run(context.Background(), c.Flags.Args())
			}
		}, "--out " + a + " is the same file as A"},
		{"agreement --out --scores", func() ([]string, func([]string) error) {
			c := AgreementCommand()
			return []string{"--scores", a, "--human", "testdata/pred.jsonl", "--out", a}, func(args []string) error {
				if err := c.Flags.Parse(args); err != nil {
					return err
				}
				return c.Run(context.Background(), c.Flags.Args())
			}
		}, "--out " + a + " is the same file as --scores"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			args, run := tc.cmd()
			if err := run(args); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant one containing %q", err, tc.want)
			}
			if b, _ := os.ReadFile(a); string(b) != string(pred) {
				t.Fatal("the input was modified")
			}
		})
	}
}

// TestEvalInputSpellings is the regression test of issue 22's eval rough edges: a UTF-8 BOM at
// the start of a JSONL input gave "invalid character 'ï'", and an aspect spelled "P" in the
// predictions failed the join with the references' "p" although prepare accepts any case (and
// the aspect's name). Both are handled by the one JSONL reader and the one aspect key of the
// dataset package; the scores equal those of the plain files.
func TestEvalInputSpellings(t *testing.T) {
	cfg := testConfig().Eval
	want, err := Evaluation(context.Background(), "testdata/pred.jsonl", "testdata/ref.jsonl", cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	pred, _ := os.ReadFile("testdata/pred.jsonl")
	ref, _ := os.ReadFile("testdata/ref.jsonl")
	upper := strings.NewReplacer(`"Aspect": "p"`, `"Aspect": "P"`, `"Aspect": "i"`, `"Aspect": "Intervention"`).Replace(string(pred))
	if upper == string(pred) {
		t.Fatal("the fixture's aspects were not respelled")
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		desc, pred, ref string
	}{
		{"BOM in both files", "\ufeff" + string(pred), "\ufeff" + string(ref)},
		{"aspects respelled in the predictions", upper, string(ref)},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			p, r := filepath.Join(dir, "p.jsonl"), filepath.Join(dir, "r.jsonl")
			os.WriteFile(p, []byte(tc.pred), 0o644)
			os.WriteFile(r, []byte(tc.ref), 0o644)
			got, err := Evaluation(context.Background(), p, r, cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			a, _ := ReportJSON(got.Report)
			a = bytes.ReplaceAll(bytes.ReplaceAll(a, []byte(p), []byte("testdata/pred.jsonl")), []byte(r), []byte("testdata/ref.jsonl"))
			b, _ := ReportJSON(want.Report)
			if !bytes.Equal(a, b) {
				t.Errorf("report differs from the plain files':\n%s\n%s", a, b)
			}
		})
	}
}
