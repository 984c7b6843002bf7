package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGTERMExits143 is the regression test of issue 10 item 14 (SIGTERM): a command stopped by
// SIGTERM exited 130 like Ctrl-C; it must exit 128+15 = 143, and SIGINT stays 130.
func TestSIGTERMExits143(t *testing.T) {
	for _, tc := range []struct {
		desc string
		sig  syscall.Signal
		want int
	}{
		{"SIGTERM", syscall.SIGTERM, 143},
		{"SIGINT", syscall.SIGINT, 130},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cmd := Command{
				Name:  "tracksum-test",
				Flags: NewFlags("tracksum-test"),
				Run: func(ctx context.Context, _ []string) error {
					if err := syscall.Kill(os.Getpid(), tc.sig); err != nil {
						t.Fatal(err)
					}
					<-ctx.Done()
					return ctx.Err()
				},
			}
			if got := run(cmd, nil); got != tc.want {
				t.Errorf("exit code = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestSecondSignalExits: a command that does not stop on the first signal (work that cannot see
// its context, or a hang) ends on the second one, with the signal's exit code, without waiting.
func TestSecondSignalExits(t *testing.T) {
	exited := make(chan int, 1)
	exitNow = func(code int) { exited <- code }
	defer func() { exitNow = os.Exit }()
	release := make(chan struct{})
	cmd := Command{
		Name:  "tracksum-test",
		Flags: NewFlags("tracksum-test"),
		Run: func(ctx context.Context, _ []string) error {
			for range 2 {
				if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
					t.Error(err)
				}
				time.Sleep(50 * time.Millisecond) // the handler takes one signal at a time
			}
			<-release // ignores ctx: only the second signal ends it
			return ctx.Err()
		},
	}
	got := make(chan int, 1)
	go func() { got <- run(cmd, nil) }()
	select {
	case code := <-exited:
		if code != 143 {
			t.Errorf("second SIGTERM exited %d, want 143", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a second SIGTERM did not end the command")
	}
	close(release)
	<-got
}

// TestCheckOutputs is the core of the regression test of issue 10 item 3: an output that is an
// input (same path, another spelling, a symlink, a hard link, a path inside an input directory) is
// refused; other outputs pass.
func TestCheckOutputs(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "x.jsonl")
	if err := os.WriteFile(in, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, "ckpt")
	if err := os.Mkdir(ckpt, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.jsonl")
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	dirLink := filepath.Join(dir, "ckpt-link")
	if err := os.Symlink(ckpt, dirLink); err != nil {
		t.Fatal(err)
	}
	parentLink := filepath.Join(t.TempDir(), "parent-link")
	if err := os.Symlink(dir, parentLink); err != nil {
		t.Fatal(err)
	}
	inputs := map[string]string{"--input": in, "--tracker": ckpt}
	for _, tc := range []struct {
		desc    string
		outputs map[string]string
		want    string // "" = accepted
	}{
		{"same path", map[string]string{"--out": in}, "--out " + in + " is the same file as --input"},
		{"other spelling", map[string]string{"--out": filepath.Join(dir, ".", "ckpt", "..", "x.jsonl")}, "is the same file as --input"},
		{"symlink to the input", map[string]string{"--out": link}, "is the same file as --input"},
		{"hard link to the input", map[string]string{"--out": hard}, "is the same file as --input"},
		{"refs is the input", map[string]string{"--out": filepath.Join(dir, "p.jsonl"), "--refs": in}, "--refs " + in + " is the same file as --input"},
		{"inside a checkpoint", map[string]string{"--out": filepath.Join(ckpt, "pred.jsonl")}, "is inside the --tracker directory"},
		{"inside a checkpoint through a symlink", map[string]string{"--out": filepath.Join(dirLink, "new", "pred.jsonl")}, "is inside the --tracker directory"},
		{"two outputs on one file", map[string]string{"--out": filepath.Join(dir, "p.jsonl"), "--refs": filepath.Join(dir, "p.jsonl")}, "--out and --refs are the same file"},
		// Issue 22 defects 6 and 7: an output directory replaced as a whole must not hold an input.
		{"output holds the inputs", map[string]string{"--out": dir}, "--input " + in + " is inside --out " + dir + ", which is replaced as a whole"},
		{"output holds the inputs through a symlink", map[string]string{"--out": parentLink}, "is inside --out " + parentLink},
		{"output is the input directory", map[string]string{"--out": dirLink}, "is the same file as --tracker"},
		{"distinct new files", map[string]string{"--out": filepath.Join(dir, "p.jsonl"), "--refs": filepath.Join(dir, "r.jsonl")}, ""},
		{"empty outputs are skipped", map[string]string{"--out": filepath.Join(dir, "p.jsonl"), "--refs": ""}, ""},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			err := CheckOutputs(inputs, tc.outputs)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v\nwant one containing %q", err, tc.want)
			}
		})
	}
}
