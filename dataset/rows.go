package dataset

// Row types of the Parquet shards written by prepare, one per training task. They are the contract
// between prepare and the training code: fields are only ever added (bump ShardSchemaVersion).
//
// Token ids come from the run's tokenizer (tokenizer.json in the prepared directory) without special
// tokens; sequences of several sentences are joined with the tokenizer's [SEP] id so that a model can
// rebuild the sentence boundaries without re-tokenizing.

// ShardSchemaVersion is written into manifest.json; readers refuse other versions.
const ShardSchemaVersion = 1

// TrackerRow is one (sentence, aspect) pair of an instance, labelled 1 when the reference cites it.
type TrackerRow struct {
	PMID          string  `parquet:"pmid"`
	Aspect        string  `parquet:"aspect"`
	SentenceIndex int32   `parquet:"sentence_index"`
	Sentence      string  `parquet:"sentence"`
	Label         bool    `parquet:"label"`
	DocLength     int32   `parquet:"doc_length"`
	RelPosition   float32 `parquet:"rel_position"` // SentenceIndex / max(DocLength-1, 1), in [0, 1]
	SentenceIDs   []int32 `parquet:"sentence_ids,list"`
}

// SummarizerRow is one positive instance: the cited sentences (and the full abstract, for the
// full-context variant) with the reference summary.
type SummarizerRow struct {
	PMID           string   `parquet:"pmid"`
	Aspect         string   `parquet:"aspect"`
	CitedIndexes   []int32  `parquet:"cited_indexes,list"`
	CitedSentences []string `parquet:"cited_sentences,list"`
	Document       []string `parquet:"document,list"`
	Summary        string   `parquet:"summary"`
	CitedIDs       []int32  `parquet:"cited_ids,list"`    // cited sentences joined with [SEP]
	DocumentIDs    []int32  `parquet:"document_ids,list"` // all sentences joined with [SEP]
	SummaryIDs     []int32  `parquet:"summary_ids,list"`
}

// SumThenTrackRow pairs a sentence with the reference summary of its instance (TracSum C.5): label 1
// when the sentence is cited for that summary. Positive instances only.
type SumThenTrackRow struct {
	PMID          string  `parquet:"pmid"`
	Aspect        string  `parquet:"aspect"`
	SentenceIndex int32   `parquet:"sentence_index"`
	Sentence      string  `parquet:"sentence"`
	Summary       string  `parquet:"summary"`
	Label         bool    `parquet:"label"`
	SentenceIDs   []int32 `parquet:"sentence_ids,list"`
	SummaryIDs    []int32 `parquet:"summary_ids,list"`
}

// EndToEndRow is one instance for a model that writes summary and citations at once (TracSum C.6),
// negatives included.
type EndToEndRow struct {
	PMID        string   `parquet:"pmid"`
	Aspect      string   `parquet:"aspect"`
	Document    []string `parquet:"document,list"`
	Summary     string   `parquet:"summary"`
	Citations   []int32  `parquet:"citations,list"`
	DocumentIDs []int32  `parquet:"document_ids,list"`
	SummaryIDs  []int32  `parquet:"summary_ids,list"`
}
