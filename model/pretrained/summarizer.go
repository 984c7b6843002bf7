package pretrained

import (
	"github.com/tracksum/tracksum/hf/chattemplate"
	"github.com/tracksum/tracksum/model/variant"
)

// summaryPrompter turns summarizer inputs into token sequences.
type summaryPrompter struct {
	chat        *Chat
	set         string
	maxLen      int
	fullContext bool
	// variant is the method whose prompts these are: "" for Track-then-Sum (Tables 16-17: the
	// tracked sentences, and the abstract with fullContext), variant.SumThenTrack (Table 18) or
	// variant.EndToEnd (Table 19), whose sentences are the whole abstract.
	variant string
	// paper renders the prompts as the paper's tables print them (summarizer.prompt_style paper).
	paper bool
}

// messages is the conversation of the prompter's method for an aspect, its sentences (tracked
// sentences, or the whole abstract for the variants) and, for TTS (+) f, the abstract.
func (p *summaryPrompter) messages(aspect string, sentences, document []string) []chattemplate.Message {
	if p.paper {
		return PaperMessages(p.set, aspect, p.variant, sentences, document)
	}
	switch p.variant {
	case variant.SumThenTrack:
		return SumThenTrackMessages(p.set, aspect, sentences)
	case variant.EndToEnd:
		return EndToEndMessages(p.set, aspect, sentences)
	}
	return SummarizerMessages(p.set, aspect, sentences, document)
}

// answer is the reference answer of the prompter's method: "Summary: ...", with the citation
// indices for END-TO-END.
func (p *summaryPrompter) answer(summary string, citations []int32) string {
	if p.variant == variant.EndToEnd && p.paper {
		return PaperEndToEndAnswer(summary, citations)
	}
	if p.variant == variant.EndToEnd {
		return EndToEndAnswer(summary, citations)
	}
	return SummarizerAnswer(summary)
}

// shorten takes cut tokens from the end of a sentence list: whole sentences while they fit in the
// cut, then the end of the last one kept. It returns the list and the cut left over.
func (p *summaryPrompter) shorten(list []string, cut int) ([]string, int) {
	out := append([]string(nil), list...)
	for cut > 0 && len(out) > 0 {
		last := out[len(out)-1]
		n := len(p.chat.Tok.Encode(last, false))
		if n <= cut {
			out = out[:len(out)-1]
			cut -= n
			continue
		}
		out[len(out)-1] = p.chat.Truncate(last, n-cut)
		cut = 0
	}
	return out, cut
}

// fitted returns the prompt's ids with the sentences (and, with full context, the document) cut
// from their ends so that the prompt and after more tokens fit in maxLen: the document gives way
// first, then the sentences. The variants' sentences are the whole abstract: its last sentences
// give way (an END-TO-END citation of a sentence cut away stays in the training answer, as the
// abstract's sentences keep their indices).
func (p *summaryPrompter) fitted(aspect string, sentences, document []string, after int) ([]int32, error) {
	var ids []int32
	cut, err := fit(p.maxLen, "the summarizer prompt", func(cut int) (int, error) {
		doc := document
		if p.fullContext && doc == nil {
			doc = []string{}
		}
		if !p.fullContext {
			doc = nil
		}
		if doc != nil {
			doc, cut = p.shorten(doc, cut)
		}
		c, _ := p.shorten(sentences, cut)
		var err error
		ids, err = p.chat.Prompt(p.messages(aspect, c, doc))
		return len(ids) + after, err
	})
	if cut > 0 {
		p.chat.cut.Add(1)
	}
	return ids, err
}

// example is the training example of a reference summary (and, for END-TO-END, its citations).
func (p *summaryPrompter) example(aspect string, sentences, document []string, summary string, citations []int32) (Example, error) {
	doc := document
	if !p.fullContext {
		doc = nil
	}
	_, turn, err := p.chat.Answer(p.messages(aspect, nil, nil), p.answer(summary, citations))
	if err != nil {
		return Example{}, err
	}
	if len(turn) >= p.maxLen {
		turn = turn[:p.maxLen/2] // a summary longer than the whole budget: keep its start
	}
	prompt, err := p.fitted(aspect, sentences, doc, len(turn))
	if err != nil {
		return Example{}, err
	}
	return AnswerExample(prompt, turn), nil
}
