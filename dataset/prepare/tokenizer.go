package prepare

import (
	"context"
	"fmt"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/internal/progress"
	"github.com/tracksum/tracksum/subword"
)

// learnTokenizer trains the subword vocabulary on the training split's sentences (each abstract
// once) and summaries, writes it to path and loads it back the way every later stage will.
func learnTokenizer(ctx context.Context, src *source, splits *dataset.SplitAssignment, tc config.Tokenizer, path string,
	bar *progress.Bar) (dataset.TokenizerInfo, *subword.Tokenizer, error) {
	var readErr error
	texts := 0
	seen := map[string]struct{}{}
	corpus := func(yield func(string) bool) {
		emit := func(s string) bool {
			if tc.MaxTrainTexts > 0 && texts >= tc.MaxTrainTexts {
				return false
			}
			texts++
			if bar != nil {
				bar.Add(1)
			}
			return yield(s)
		}
		for run, err := range src.abstracts(ctx) {
			if err != nil {
				readErr = err
				return
			}
			for _, in := range run {
				if splits.Split(in.PMID, in.Aspect) != dataset.SplitTrain {
					continue
				}
				if _, ok := seen[in.PMID]; !ok {
					seen[in.PMID] = struct{}{}
					for _, s := range in.Document {
						if !emit(s) {
							return
						}
					}
				}
				if !emit(in.Summary) {
					return
				}
			}
		}
	}
	vocab, err := subword.Train(corpus, subword.TrainOptions{Kind: tc.Kind, VocabSize: tc.VocabSize, MinFrequency: tc.MinFrequency})
	if readErr != nil {
		return dataset.TokenizerInfo{}, nil, readErr
	}
	if err != nil {
		return dataset.TokenizerInfo{}, nil, fmt.Errorf("prepare: tokenizer: %w", err)
	}
	if err := vocab.WriteFile(path); err != nil {
		return dataset.TokenizerInfo{}, nil, fmt.Errorf("prepare: tokenizer: %w", err)
	}
	tok, err := subword.Load(path)
	if err != nil {
		return dataset.TokenizerInfo{}, nil, fmt.Errorf("prepare: tokenizer: %w", err)
	}
	sum, _, err := atomicio.SHA256(path)
	if err != nil {
		return dataset.TokenizerInfo{}, nil, fmt.Errorf("prepare: tokenizer: %w", err)
	}
	return dataset.TokenizerInfo{File: dataset.TokenizerFile, Kind: tc.Kind, VocabSize: tok.VocabSize(), TrainTexts: texts, SHA256: sum}, tok, nil
}
