package pretrained

// summaryPrompter turns summarizer inputs into token sequences.
type summaryPrompter struct {
	chat        *Chat
	set         string
	maxLen      int
	fullContext bool
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

// fitted returns the prompt's ids with the tracked sentences (and, with full context, the
// document) cut from their ends so that the prompt and after more tokens fit in maxLen: the
// document gives way first, then the tracked sentences.
func (p *summaryPrompter) fitted(aspect string, cited, document []string, after int) ([]int32, error) {
	var ids []int32
	_, err := fit(p.maxLen, "the summarizer prompt", func(cut int) (int, error) {
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
		c, _ := p.shorten(cited, cut)
		var err error
		ids, err = p.chat.Prompt(SummarizerMessages(p.set, aspect, c, doc))
		return len(ids) + after, err
	})
	return ids, err
}

// example is the training example of a reference summary.
func (p *summaryPrompter) example(aspect string, cited, document []string, summary string) (Example, error) {
	doc := document
	if !p.fullContext {
		doc = nil
	}
	_, turn, err := p.chat.Answer(SummarizerMessages(p.set, aspect, nil, nil), SummarizerAnswer(summary))
	if err != nil {
		return Example{}, err
	}
	if len(turn) >= p.maxLen {
		turn = turn[:p.maxLen/2] // a summary longer than the whole budget: keep its start
	}
	prompt, err := p.fitted(aspect, cited, doc, len(turn))
	if err != nil {
		return Example{}, err
	}
	return AnswerExample(prompt, turn), nil
}
