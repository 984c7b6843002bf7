package training

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// truncateMetrics reads metrics.jsonl through atomicio.ReadJSONL: the rows after the resume
// point and a torn last line go, the rest stays byte for byte, and a line that is not a row is a
// refusal naming the file and line.
func TestTruncateMetrics(t *testing.T) {
	const rows = "{\"split\":\"train\",\"step\":1}\n{\"split\":\"dev\",\"step\":2,\"loss\":0.5}\n{\"split\":\"train\",\"step\":3}\n"
	for _, tc := range []struct {
		desc, content string
		step          int
		want          string // the file after; "" with wantErr
		wantErr       string
	}{
		{desc: "rows after the step dropped", content: rows, step: 2, want: rows[:strings.Index(rows, "{\"split\":\"train\",\"step\":3}")]},
		{desc: "nothing after the step", content: rows, step: 3, want: rows},
		{desc: "torn last line dropped", content: rows + "{\"split\":\"tr", step: 3, want: rows},
		{desc: "not a row", content: rows + "{\"split\":\"dev\"}\n", step: 3, wantErr: "metrics.jsonl:4: not a metrics row"},
		{desc: "not JSON", content: "{\"step\":1}\nstep 2\n", step: 3, wantErr: "metrics.jsonl:2:1: invalid character 's'"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, MetricsFile)
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			err := truncateMetrics(dir, tc.step)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrResume) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want ErrResume naming %s and %q", err, path, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(path); string(b) != tc.want {
				t.Errorf("file after:\n%s\nwant:\n%s", b, tc.want)
			}
		})
	}
	if err := truncateMetrics(t.TempDir(), 3); err != nil {
		t.Errorf("no metrics.jsonl: %v", err)
	}
}
