package serve

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/tracksum/tracksum/dataset"
)

// Task is what the prompt convention (docs/serve.md) reads from a user message.
type Task struct {
	// Labels are the numbers the prompt gave its sentences, in order (e.g. 0, 1, 2 or 1, 2, 3);
	// empty when the message has no numbered sentences.
	Labels []int
	// Sentences are the numbered sentences, without their markers.
	Sentences []string
	// Lists are the JSON lists of strings found one per line in a message without numbered
	// sentences (e.g. TracSum's summarizer prompt: the tracked sentences, then the full abstract).
	Lists [][]string
	// Aspect is the aspect code named by the message ("" when none is named).
	Aspect string
	// Text is the whole message: what a message without numbered sentences is summarized from.
	Text string
}

// Numbered reports whether the message held numbered sentences (the track-then-sum task).
func (t Task) Numbered() bool { return len(t.Sentences) > 0 }

// markerLine matches one numbered sentence on its own line: "[0] text", "0: text", "0. text",
// "0) text", optionally quoted or as a list item ("- [0] text").
var markerLine = regexp.MustCompile(`^\s*(?:[-*•]\s*)?["']?\s*(?:\[(\d{1,4})\]|\((\d{1,4})\)|(\d{1,4})\s*[:.)])\s+(.+?)["']?\s*,?\s*$`)

// inlineMarker matches a sentence marker inside a JSON-like list of strings: `"0: text"`.
var inlineMarker = regexp.MustCompile(`^\s*(\d{1,4})\s*:\s+(.+)$`)

// explicitAspect matches an "Aspect: X" line.
var explicitAspect = regexp.MustCompile(`(?im)^\s*aspect\s*:\s*(.+?)\s*$`)

// ParseTask reads a user message with the prompt convention of docs/serve.md:
//
//   - the numbered sentences are the LAST run of consecutive numbers (n, n+1, ...) written either
//     one per line ("[0] ...", "0: ...", "0. ...", "0) ...") or as a JSON list of strings whose
//     items start with "0: " (TracSum's prompt layout, appendix G). Earlier runs (the
//     demonstrations of a few-shot prompt) are ignored, so a few-shot prompt is answered about its
//     last document;
//   - without numbered sentences, the JSON lists of strings written one per line are Lists;
//   - the aspect is the one named by the last "Aspect: X" line (code or name), else the first aspect of
//     set whose name (or its singular, e.g. "aim") occurs as a word in the message outside the
//     numbered sentences and the lists.
func ParseTask(text, set string) Task {
	t := Task{Text: text}
	t.Labels, t.Sentences = lastNumberedRun(text)
	skip := t.Sentences
	if !t.Numbered() {
		t.Lists = stringLists(text)
		for _, l := range t.Lists {
			skip = append(skip, l...)
		}
	}
	t.Aspect = findAspect(text, set, skip)
	return t
}

// stringLists returns the JSON lists of non-empty strings written one per line in text.
func stringLists(text string) [][]string {
	var out [][]string
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.Trim(strings.TrimSpace(line), "'")
		if !strings.HasPrefix(trimmed, "[") || !strings.HasSuffix(trimmed, "]") {
			continue
		}
		list, ok := jsonList(trimmed)
		if !ok {
			continue
		}
		var items []string
		for _, s := range list {
			if s = strings.TrimSpace(s); s != "" {
				items = append(items, s)
			}
		}
		if len(items) > 0 {
			out = append(out, items)
		}
	}
	return out
}

type numbered struct {
	label int
	text  string
}

// lastNumberedRun returns the last run of consecutively numbered sentences in text.
func lastNumberedRun(text string) ([]int, []string) {
	var items []numbered
	// Lines first; a line holding a JSON list contributes its items.
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if i := strings.Index(trimmed, "["); i >= 0 && strings.HasSuffix(strings.TrimRight(trimmed, "' "), "]") {
			if list, ok := jsonList(strings.Trim(trimmed[i:], "' ")); ok {
				matched := false
				for _, s := range list {
					if m := inlineMarker.FindStringSubmatch(s); m != nil {
						n, _ := strconv.Atoi(m[1])
						items = append(items, numbered{n, strings.TrimSpace(m[2])})
						matched = true
					}
				}
				if matched {
					continue
				}
			}
		}
		if m := markerLine.FindStringSubmatch(line); m != nil {
			num := m[1] + m[2] + m[3]
			n, _ := strconv.Atoi(num)
			items = append(items, numbered{n, strings.TrimSpace(m[4])})
		} else if trimmed != "" {
			// Any other non-empty line ends a run.
			items = append(items, numbered{-1, ""})
		}
	}
	// Split into runs of consecutive labels; keep the last run of at least one sentence.
	var best []numbered
	var run []numbered
	flush := func() {
		if len(run) > 0 {
			best = run
		}
		run = nil
	}
	for _, it := range items {
		switch {
		case it.label < 0:
			flush()
		case len(run) > 0 && it.label == run[len(run)-1].label+1:
			run = append(run, it)
		case len(run) > 0:
			flush()
			run = []numbered{it}
		default:
			run = []numbered{it}
		}
	}
	flush()
	if len(best) == 0 {
		return nil, nil
	}
	labels := make([]int, len(best))
	sents := make([]string, len(best))
	for i, it := range best {
		labels[i], sents[i] = it.label, it.text
	}
	return labels, sents
}

// jsonList decodes a JSON list of strings; TracSum's layout sometimes misses a comma between two
// strings ("..." "..."), which is repaired first.
func jsonList(s string) ([]string, bool) {
	var list []string
	if json.Unmarshal([]byte(s), &list) == nil {
		return list, true
	}
	repaired := regexp.MustCompile(`"\s+"`).ReplaceAllString(s, `", "`)
	if json.Unmarshal([]byte(repaired), &list) == nil {
		return list, true
	}
	return nil, false
}

// findAspect returns the aspect named by an "Aspect:" line, else the first aspect mentioned in the
// text outside the sentences.
func findAspect(text, set string, sentences []string) string {
	// The last "Aspect:" line wins: in a few-shot prompt it is the one of the question asked.
	ms := explicitAspect.FindAllStringSubmatch(text, -1)
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		if a, ok := dataset.LookupAspect(set, strings.Trim(m[1], ".\"' ")); ok {
			return a.Code
		}
	}
	rest := text
	for _, s := range sentences {
		rest = strings.Replace(rest, s, " ", 1)
	}
	words := tokenize(rest)
	first, code := len(words)+1, ""
	for _, a := range dataset.Aspects(set) {
		name := tokenize(a.Name)
		for i := range words {
			if i >= first {
				break
			}
			if matchWords(words[i:], name) {
				first, code = i, a.Code
				break
			}
		}
	}
	return code
}

// matchWords reports whether words starts with name, each word equal or a plural of the other
// ("aim" and "aims", "side effect" and "side effects", "medicine" and "medicines").
func matchWords(words, name []string) bool {
	if len(words) < len(name) || len(name) == 0 {
		return false
	}
	for i, n := range name {
		w := words[i]
		if w != n && w+"s" != n && w != n+"s" {
			return false
		}
	}
	return true
}

func tokenize(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}
