// Package tracker is the sentence-relevance model of Track-then-Sum: for an abstract and an aspect
// (aims, intervention, outcomes, ...) it gives each sentence the probability that a summary of that
// aspect cites it (TracSum sections 5.2 and C.2), trained with binary cross-entropy.
//
// The default tracker.architecture, "lexical-context", has no network: the textbook TF-IDF +
// logistic regression per aspect (Textbook) with the context rescorer stacked on its inner
// out-of-fold logits (LexicalBaseline at StageContext), saved as lexical.json and context.json;
// it is the best tracker of the cross-validation (docs/tracker.md).
//
// Two network architectures share the input pipeline and the head:
//   - "transformer": a learned aspect token followed by the sentence's tokens, plus learned position
//     embeddings, through a pre-norm transformer encoder; the aspect token's final state is the
//     sentence vector.
//   - "ngram": unigram plus hashed n-gram embeddings, pooled by aspect-conditioned attention and by
//     mean; much cheaper, and competitive on a few hundred annotated abstracts.
//
// Both add the sentence's position in the abstract (PositionFeatures) in an aspect-specific head.
// Variables live under /model/embeddings, /model/encoder (or /model/ngram) and /model/head, so a
// pretrained backbone converted to those paths can be loaded with model.LoadVariablesInto.
//
// A checkpoint directory (written by Train) holds hparams.json, tokenizer.json, config.yaml, the
// best-on-dev variables in best/model.safetensors (lexical.json for lexical-context) and the
// training logs; Load rebuilds the model from it alone.
//
// # Example
//
//	m, err := tracker.Load("checkpoints/tracker")
//	if err != nil {
//		return err
//	}
//	probs, err := m.Score(sentences, "o") // one probability per sentence, aspect by code or name
package tracker
