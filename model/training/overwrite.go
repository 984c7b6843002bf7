package training

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/model/checkpoint"
)

// runMarkers are the top-level entries of which at least one is in every directory a training run
// writes: a checkpoint of either task or of a pretrained model, a variant, a cross-validation, or
// a run interrupted before its first checkpoint (StateDir).
var runMarkers = []string{checkpoint.ManifestFile, checkpoint.HyperparamsFile, checkpoint.SummarizerFile, checkpoint.PretrainedFile,
	checkpoint.VariantFile, CrossValidationMarker, StateDir}

// previousRun is the DirOptions.Previous of tracksum-train --overwrite: nil when dir is the output
// of an earlier training run (it holds one of runMarkers), else an error saying why not. A
// directory that is no training output (a prepared directory, an eval output, a user's files) is
// never replaced, as with the other commands' --overwrite.
func previousRun(dir string) error {
	for _, m := range runMarkers {
		if _, err := os.Stat(filepath.Join(dir, m)); err == nil {
			return nil
		}
	}
	return fmt.Errorf("holds no training run (none of %s), so was not written by tracksum-train", strings.Join(runMarkers, ", "))
}

// Overwrite is tracksum-train --overwrite: it starts a fresh run in place of a previous one in
// out, never resuming it, without losing it before the new run is complete. When out holds a
// previous run, train runs into a new temporary sibling of out (atomicio.Dir, holding out's lock
// meanwhile), and only when it returns nil does the result replace out, in one step; an error, a
// crash or Ctrl-C leave the previous run as it was (a rerun removes the temporary directory and
// starts afresh again; a rerun without --overwrite resumes or reuses the previous run). When out
// is absent or empty there is nothing to replace and train runs into out itself. A non-empty out
// that is not a training output is refused, naming what it holds (ErrForeign).
func Overwrite(out string, log io.Writer, train func(dir string) error) error {
	// A file or an unreadable directory goes on to NewDirWith, which says which in the words of
	// the other commands.
	if entries, err := os.ReadDir(out); errors.Is(err, os.ErrNotExist) || (err == nil && len(entries) == 0) {
		return train(out)
	}
	d, err := atomicio.NewDirWith(out, atomicio.DirOptions{Overwrite: true, Previous: previousRun})
	if err != nil {
		return err
	}
	defer d.Abort()
	if log != nil {
		fmt.Fprintf(log, "training: --overwrite: a fresh run in %s replaces %s once it has finished\n", d.Tmp, d.Final)
	}
	if err := train(d.Tmp); err != nil {
		return err
	}
	if err := d.Commit(); err != nil {
		return err
	}
	if log != nil {
		fmt.Fprintf(log, "training: --overwrite: %s replaced by the new run\n", d.Final)
	}
	return nil
}

// TrainThenSeal runs train, a task's training into the checkpoint directory outDir, then seals
// the checkpoint with the trained model's identity (checkpoint.Seal: the manifest, written last,
// marks it finished), unless train failed or part is set (a part of a larger run, whose caller
// seals the whole).
func TrainThenSeal[M, R any](outDir string, part bool, train func() (M, R, error), identity func(M) checkpoint.Identity) (M, R, error) {
	m, rep, err := train()
	if err != nil || part {
		return m, rep, err
	}
	if _, err := checkpoint.Seal(outDir, identity(m)); err != nil {
		var noM M
		var noR R
		return noM, noR, err
	}
	return m, rep, nil
}
