package serve_test

import (
	"context"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/infer"
	"github.com/tracksum/tracksum/model/pretrained/pretrainedtest"
	"github.com/tracksum/tracksum/model/summarizer"
	"github.com/tracksum/tracksum/model/tracker"
	"github.com/tracksum/tracksum/serve"
	"github.com/tracksum/tracksum/serve/servetest"
)

// TestTrackSumAnswerIsTheModels: served through infer's Pipeline, a from-scratch checkpoint pair
// answers what its models give when called directly (tracker scores at the tracker's threshold,
// the summarizer's summary of the kept sentences), as before serve loaded them through infer;
// grounding (restore) only appends to the summary, citing the same sentences.
func TestTrackSumAnswerIsTheModels(t *testing.T) {
	summ, trk, _ := servetest.Checkpoints(t)
	s, err := summarizer.Load(summ)
	if err != nil {
		t.Fatal(err)
	}
	prompt := numberedPrompt + "[3] Adverse events were mild.\n[4] Sleep quality improved with drug X.\n"
	task := serve.ParseTask(prompt, s.Meta.AspectSet)
	for _, trackerDir := range []string{trk, ""} {
		t.Run("tracker "+strconv.FormatBool(trackerDir != ""), func(t *testing.T) {
			keep := []int{0, 1, 2, 3, 4}
			if trackerDir != "" {
				tr, err := tracker.Load(trackerDir)
				if err != nil {
					t.Fatal(err)
				}
				scores, err := tr.ScoreBatch([]tracker.Request{{Doc: task.Sentences, Aspect: task.Aspect}})
				if err != nil {
					t.Fatal(err)
				}
				keep = nil
				for i, p := range scores[0] {
					if float64(p) >= tr.Threshold() {
						keep = append(keep, i)
					}
				}
			}
			want := "Summary: " + serve.Unknown + "\nCitations: Null."
			summary := ""
			if len(keep) > 0 {
				var cited, labels []string
				for _, i := range keep {
					cited = append(cited, task.Sentences[i])
					labels = append(labels, strconv.Itoa(task.Labels[i]))
				}
				out, err := s.Summarize([]summarizer.Request{{Aspect: task.Aspect, Cited: cited, Document: task.Sentences}}, s.DecodeOptions())
				if err != nil {
					t.Fatal(err)
				}
				summary = out[0]
				want = "Summary: " + summary + "\nCitations: [" + strings.Join(labels, ", ") + "]"
			}
			for _, grounding := range []string{"off", "restore"} {
				cfg := config.Default()
				cfg.Infer.Grounding = grounding
				b, err := serve.LoadTrackSumWith(context.Background(), &cfg, serve.TrackSumOptions{
					Models: infer.Options{Summarizer: summ, Tracker: trackerDir}, Log: io.Discard})
				if err != nil {
					t.Fatal(err)
				}
				c, err := b.Complete(context.Background(), []serve.Message{{Role: "user", Content: prompt}}, serve.Params{})
				if err != nil {
					t.Fatal(err)
				}
				if grounding == "off" && c.Content != want {
					t.Errorf("grounding off: answer %q, want %q", c.Content, want)
				}
				_, citations, _ := strings.Cut(want, "\nCitations: ")
				if grounding == "restore" && (!strings.HasPrefix(c.Content, "Summary: "+strings.TrimSuffix(summary, ".")) ||
					!strings.HasSuffix(c.Content, "\nCitations: "+citations)) {
					t.Errorf("grounding restore: answer %q, want %q with restored sentences only", c.Content, want)
				}
			}
		})
	}
}

// TestTrackSumPretrainedSummarizer is the case that failed before serve loaded models through
// infer: a LoRA summarizer (model/pretrained) in tracksum mode, every numbered sentence cited.
func TestTrackSumPretrainedSummarizer(t *testing.T) {
	if testing.Short() {
		t.Skip("fine-tunes a tiny model (-short)")
	}
	ck := pretrainedtest.Summarizer(t)
	cfg := config.Default()
	b, err := serve.LoadTrackSumWith(context.Background(), &cfg, serve.TrackSumOptions{Models: infer.Options{Summarizer: ck}, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.Complete(context.Background(), []serve.Message{{Role: "user", Content: numberedPrompt}}, serve.Params{MaxTokens: 40})
	if err != nil {
		t.Fatal(err)
	}
	if m := answerFormat.FindStringSubmatch(c.Content); (m == nil || m[2] != "[0, 1, 2]") && !c.Truncated {
		t.Errorf("answer %q, want a summary citing [0, 1, 2]", c.Content)
	}
	if c.PromptTokens == 0 || c.CompletionTokens == 0 || c.CompletionTokens > 40 {
		t.Errorf("usage %d + %d", c.PromptTokens, c.CompletionTokens)
	}
	if s := b.Pipeline.AspectSet; s != dataset.AspectSetTracSum {
		t.Errorf("aspect set %q", s)
	}
}
