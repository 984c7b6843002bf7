package pretrained

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/hf/chattemplate"
	"github.com/tracksum/tracksum/model/ete"
	"github.com/tracksum/tracksum/model/role"
)

// The prompts are those of the TracSum authors' released training scripts and of the paper's
// Tables 16-17 (../shared/docs/paper-recipe.md): the tracker's user turn and "Relevance:Yes." /
// "Relevance:No." answer are the script's text, word for word; the summarizer's system turn is the
// script's, its user turn follows Table 16 (Table 17 with the full abstract) with the aspect's
// phrase in place of the table's placeholder.
//
// The Table 6 variants' prompts (SUM-THEN-TRACK, END-TO-END) follow the paper's Tables 18-19 for
// the summarizers; no script of theirs was released, so they reuse the Track-then-Sum script's
// system turn and answer prefix, and the pair tracker's user turn (which the paper does not print)
// is the released tracker prompt's with the summary in place of the aspect.

// paperAspectNames are the aspect names of the released scripts' prompts (TracSum codes).
var paperAspectNames = map[string]string{
	"a": "Aims or Objective",
	"i": "Intervention or Methods",
	"o": "Outcomes or Results",
	"p": "Patients Information",
	"m": "Medicines Information",
	"d": "Treatment Duration",
	"s": "Side Effects",
}

// AspectName is the aspect's name in the prompts: the released scripts' name for a TracSum code,
// else the registry's name (PCoA aspects have no script to follow).
func AspectName(set, code string) string {
	if set == dataset.AspectSetTracSum || set == "" {
		if n, ok := paperAspectNames[code]; ok {
			return n
		}
	}
	if a, ok := dataset.LookupAspect(set, code); ok {
		return a.Name
	}
	return code
}

// summaryTopic is what Table 16's instruction asks to summarize for a TracSum aspect; the table
// shows aspect a's ("the research aims or questions of the study") and leaves the others as a
// placeholder, filled here in the same style.
var summaryTopic = map[string]string{
	"a": "the research aims or questions of the study",
	"i": "the interventions or methods of the study",
	"o": "the outcomes or results of the study",
	"p": "the information about the patients of the study",
	"m": "the information about the medicines used in the study",
	"d": "the duration of the treatment in the study",
	"s": "the side effects observed in the study",
}

// topic is the summarizer's phrase for an aspect of any set.
func topic(set, code string) string {
	if set == dataset.AspectSetTracSum || set == "" {
		if t, ok := summaryTopic[code]; ok {
			return t
		}
	}
	if a, ok := dataset.LookupAspect(set, code); ok {
		return fmt.Sprintf("the %s of the study (%s)", strings.ToLower(a.Name), a.Description)
	}
	return "the " + code + " of the study"
}

// Tracker answers of the released script.
const (
	AnswerYes = "Relevance:Yes."
	AnswerNo  = "Relevance:No."
)

// TrackerMessages is the released script's tracker conversation for one (sentence, aspect) pair
// (user turn only; the answer is AnswerYes or AnswerNo).
func TrackerMessages(sentence, aspectName string) []chattemplate.Message {
	return []chattemplate.Message{{Role: "user", Content: "Please determine whether the provided sentence contains information relevant to the given aspect.\nSentence: " +
		sentence + "\nAspect: " + aspectName + ".\n"}}
}

// SummarizerSystem is the released script's system turn.
const SummarizerSystem = "You are a great summarization assistant. Please follow the instructions strictly."

// SummaryPrefix starts the summarizer's answer.
const SummaryPrefix = "Summary:"

// SummarizerMessages is the summarizer conversation (Table 16; with document, Table 17) for the
// tracked sentences cited of one aspect.
func SummarizerMessages(set, aspect string, cited, document []string) []chattemplate.Message {
	var b strings.Builder
	b.WriteString("Instructions:\nSummarize " + topic(set, aspect) +
		" in one clear sentence that includes all key details from the input sentences without omitting important information.")
	if document != nil {
		b.WriteString(" The summary must be based solely on the provided sentences. The full text is for reference only and must not be used to introduce any new information not present in the sentences.")
	}
	b.WriteString("\n\nSentences:\n" + jsonList(cited) + "\n")
	if document != nil {
		b.WriteString("\nFull Context:\n" + jsonList(document) + "\n")
	}
	b.WriteString("\nSummary:")
	return []chattemplate.Message{{Role: "system", Content: SummarizerSystem}, {Role: "user", Content: b.String()}}
}

// SumThenTrackMessages is the SUM-THEN-TRACK summarizer's conversation (Table 18): the aspect's
// instruction and the whole abstract. The answer is SummarizerAnswer's, "Summary: ..."
// ("Summary: Unknown." when the abstract does not report the aspect).
func SumThenTrackMessages(set, aspect string, document []string) []chattemplate.Message {
	user := "Instructions:\nSummarize " + topic(set, aspect) + " in one clear sentence based on the given article.\n\n" +
		"Article:\n" + jsonList(document) + "\n\nSummary:"
	return []chattemplate.Message{{Role: "system", Content: SummarizerSystem}, {Role: "user", Content: user}}
}

// PairTrackerMessages is the SUM-THEN-TRACK tracker's conversation for one (sentence, summary)
// pair (section C.5.3: a binary classification of (c, sum) pairs labelled by the citations). The
// paper does not print this prompt: it is the released tracker prompt (TrackerMessages) asking
// whether the sentence supports the summary instead of whether it is relevant to the aspect. The
// generative head answers AnswerYes or AnswerNo, as the aspect tracker does.
func PairTrackerMessages(sentence, summary string) []chattemplate.Message {
	return []chattemplate.Message{{Role: "user", Content: "Please determine whether the provided sentence supports the given summary.\nSentence: " +
		sentence + "\nSummary: " + summary + "\n"}}
}

// CitationsPrefix separates the END-TO-END answer's summary from its citation indices.
const CitationsPrefix = "Citations:"

// EndToEndMessages is the END-TO-END conversation (Table 19): the aspect's instruction and the
// abstract's sentences, each after its index ("3: ...", ete.IndexedSentences), ending with the
// two fields of the answer the table shows.
func EndToEndMessages(set, aspect string, document []string) []chattemplate.Message {
	user := "Instructions:\nGiven an article, summarize " + topic(set, aspect) +
		" in one clear sentence and output the index of the cited sentences.\n\n" +
		"Sentences:\n" + jsonList(ete.IndexedSentences(document)) + "\n\n" + SummaryPrefix + "\n" + CitationsPrefix
	return []chattemplate.Message{{Role: "system", Content: SummarizerSystem}, {Role: "user", Content: user}}
}

// EndToEndAnswer is the assistant turn of an END-TO-END training example. It is the paper's form
// (Table 19's "Summary:" and "Citations:" fields), "Summary: S\nCitations: 0, 3", rather than the
// from-scratch model's "S [CITE] 0 3": a pretrained LM reads the words of its instruction, and
// ParseEndToEnd reads either form's indices with model/ete's repairs. A negative is
// "Summary: Unknown.\nCitations:", with no index.
func EndToEndAnswer(summary string, citations []int32) string {
	idx := make([]string, len(citations))
	for i, c := range citations {
		idx[i] = strconv.Itoa(int(c))
	}
	return strings.TrimSpace(SummarizerAnswer(summary) + "\n" + CitationsPrefix + " " + strings.Join(idx, ", "))
}

// ParseEndToEnd reads a generated END-TO-END answer for an abstract of n sentences: special
// tokens are removed, the text after the first "Summary:" (any case; all of it when missing) is
// read by role.ParseMarked with CitationsPrefix as its marker: invalid, out-of-range and repeated
// indices are dropped and counted, "Unknown." has no citation, and a missing "Citations:" is
// role.ProblemNoCitations.
func ParseEndToEnd(answer string, n int, special []string) role.Output {
	for _, s := range special {
		if s != "" {
			answer = strings.ReplaceAll(answer, s, " ")
		}
	}
	if i := indexFold(answer, SummaryPrefix); i >= 0 {
		answer = answer[i+len(SummaryPrefix):]
	}
	// The paper's negative cites "Null." (prompt_style paper): no index, not a malformed one.
	if i := indexFold(answer, CitationsPrefix); i >= 0 {
		if rest := strings.TrimSpace(answer[i+len(CitationsPrefix):]); strings.EqualFold(strings.TrimSuffix(rest, "."), "null") {
			answer = answer[:i+len(CitationsPrefix)]
		}
	}
	return role.ParseMarked(answer, n, CitationsPrefix)
}

// indexFold is the byte offset of the first occurrence of sub in s, any case, or -1. It compares
// s's own bytes: lower-casing s first would change the length of some text (invalid UTF-8, "İ")
// and misplace the offset (model/ete's FuzzParse found it there).
func indexFold(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

// SummarizerAnswer is the assistant turn of a training example.
func SummarizerAnswer(summary string) string {
	return SummaryPrefix + " " + strings.TrimSpace(summary)
}

// jsonList renders sentences as the papers' one-line JSON list, without HTML escaping.
func jsonList(items []string) string {
	if items == nil {
		items = []string{}
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(items) // strings always encode
	return strings.TrimSpace(b.String())
}

// ParseSummary reads a generated answer: the text after "Summary:" (any case, the first one), or
// the whole answer when the prefix is missing; special tokens and surrounding white space are
// removed. An empty answer, or one that says the aspect is absent, is "Unknown.".
func ParseSummary(answer string, special []string) string {
	for _, s := range special {
		if s != "" {
			answer = strings.ReplaceAll(answer, s, " ")
		}
	}
	if i := indexFold(answer, SummaryPrefix); i >= 0 {
		answer = answer[i+len(SummaryPrefix):]
	}
	// A summary is one paragraph: what follows a blank line is the model talking on.
	answer = strings.TrimSpace(answer)
	if i := strings.Index(answer, "\n\n"); i >= 0 {
		answer = answer[:i]
	}
	answer = strings.Join(strings.Fields(answer), " ")
	answer = strings.Trim(answer, " *_\"'`")
	if dataset.IsUnknownSummary(answer) {
		return dataset.UnknownSummary
	}
	return answer
}

// paperAimsTopic is the text Tables 15-19 highlight in aims' instruction: the placeholder that
// each aspect's description replaces.
const paperAimsTopic = "the research aims or questions of the study"

// paperTopic is what the paper's instructions ask to summarize: aims' text as printed, and for
// every other aspect its description (dataset's registry) in its place, as the captions say.
func paperTopic(set, code string) string {
	if (set == dataset.AspectSetTracSum || set == "") && code == "a" {
		return paperAimsTopic
	}
	if a, ok := dataset.LookupAspect(set, code); ok {
		return "the " + a.Description
	}
	return "the " + code
}

// paperList renders sentences as the tables print them: a JSON-style list with ", " between
// the items, within single quotes ('["...", "..."]').
func paperList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = strings.TrimSuffix(jsonList([]string{s}), "\n")
		q[i] = q[i][1 : len(q[i])-1]
	}
	return "'[" + strings.Join(q, ", ") + "]'"
}

// paperNull is the citations of a negative in the tables (Table 15's negative demonstration).
const paperNull = "Null."

// PaperMessages is the summarizer conversation laid out as the paper's Tables 16-19 print it (each
// heading alone on its line, a blank line between the parts, the lists quoted '[...]'), for the
// method v: "" Track-then-Sum (Table 16; with document, Table 17), variant.SumThenTrack (Table
// 18: the abstract as the article) or variant.EndToEnd (Table 19: the indexed sentences, ending with
// the answer's two fields). The system turn is the released script's.
func PaperMessages(set, aspect, v string, sentences, document []string) []chattemplate.Message {
	part := func(heading, body string) string { return heading + "\n\n" + body + "\n\n" }
	t := paperTopic(set, aspect)
	var user string
	switch v {
	case "sum_then_track":
		user = part("Instructions", "Summarize "+t+" in one clear sentence based on the given article.") +
			part("Article", paperList(sentences)) + SummaryPrefix
	case "end_to_end":
		user = part("Instructions", "Given an article, summarize "+t+" in one clear sentence and output the index of the cited sentences.") +
			part("Sentences", paperList(ete.IndexedSentences(sentences))) + SummaryPrefix + "\n\n" + CitationsPrefix
	default:
		instr := "Summarize " + t + " in one clear sentence that includes all key details from the input sentences without omitting important information."
		if document != nil {
			instr += " The summary must be based solely on the provided sentences. The full text is for reference only and must not be used to introduce any new information not present in the sentences."
		}
		user = part("Instructions", instr) + part("Sentences", paperList(sentences))
		if document != nil {
			user += part("Full Context", paperList(document))
		}
		user += SummaryPrefix
	}
	return []chattemplate.Message{{Role: "system", Content: SummarizerSystem}, {Role: "user", Content: user}}
}

// PaperEndToEndAnswer is EndToEndAnswer as the tables write it: "Summary: S\n\nCitations: [0, 3]",
// and "Citations: Null." for a negative.
func PaperEndToEndAnswer(summary string, citations []int32) string {
	cite := paperNull
	if len(citations) > 0 {
		idx := make([]string, len(citations))
		for i, c := range citations {
			idx[i] = strconv.Itoa(int(c))
		}
		cite = "[" + strings.Join(idx, ", ") + "]"
	}
	return SummarizerAnswer(summary) + "\n\n" + CitationsPrefix + " " + cite
}
