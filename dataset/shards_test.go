package dataset

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeManifestForTest(t *testing.T, dir string, tasks map[string]TaskInfo) {
	t.Helper()
	b, err := json.Marshal(Manifest{SchemaVersion: ShardSchemaVersion, Tasks: tasks})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestShardRoundTrip(t *testing.T) {
	dir := t.TempDir()
	w := NewShardWriter[TrackerRow](dir, TaskTracker, SplitTrain, 1000, 64)
	var want []TrackerRow
	for i := range 2500 {
		r := TrackerRow{PMID: "P" + string(rune('a'+i%26)), Aspect: "o", SentenceIndex: int32(i % 17), Sentence: strings.Repeat("x", i%5),
			Label: i%3 == 0, DocLength: 17, RelPosition: float32(i%17) / 16, SentenceIDs: []int32{int32(i), 2, 3}[:1+i%3]}
		want = append(want, r)
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	shards, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) != 3 || shards[0].Rows != 1000 || shards[2].Rows != 500 || shards[1].Path != "tracker/train-00001-of-00003.parquet" {
		t.Fatalf("shards = %+v", shards)
	}
	writeManifestForTest(t, dir, map[string]TaskInfo{TaskTracker: {Splits: map[string]SplitShards{SplitTrain: {Rows: 2500, Shards: shards}}}})
	var got []TrackerRow
	for r, err := range ReadShards[TrackerRow](dir, TaskTracker, SplitTrain) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip differs: got %d rows, first %+v want %+v", len(got), got[0], want[0])
	}
	// A second write of the same rows is byte-identical.
	dir2 := t.TempDir()
	w2 := NewShardWriter[TrackerRow](dir2, TaskTracker, SplitTrain, 1000, 64)
	for _, r := range want {
		if err := w2.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	shards2, err := w2.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(shards, shards2) {
		t.Fatalf("not deterministic: %+v vs %+v", shards, shards2)
	}
}

func TestShardRoundTripAllTasks(t *testing.T) {
	dir := t.TempDir()
	sum := SummarizerRow{PMID: "1", Aspect: "m", CitedIndexes: []int32{0, 2}, CitedSentences: []string{"a b", "c"}, Document: []string{"a b", "x", "c"},
		Summary: "s", CitedIDs: []int32{5, 6, 1, 7}, DocumentIDs: []int32{5, 6, 1, 8, 1, 7}, SummaryIDs: []int32{9}}
	stt := SumThenTrackRow{PMID: "1", Aspect: "m", SentenceIndex: 2, Sentence: "c", Summary: "s", Label: true, SentenceIDs: []int32{7}, SummaryIDs: []int32{9}}
	ete := EndToEndRow{PMID: "1", Aspect: "d", Document: []string{"a"}, Summary: UnknownSummary, Citations: []int32{}, DocumentIDs: []int32{5}, SummaryIDs: []int32{3}}
	ws := NewShardWriter[SummarizerRow](dir, TaskSummarizer, SplitDev, 10, 10)
	wt := NewShardWriter[SumThenTrackRow](dir, TaskSumThenTrack, SplitDev, 10, 10)
	we := NewShardWriter[EndToEndRow](dir, TaskEndToEnd, SplitDev, 10, 10)
	if err := ws.Write(sum); err != nil {
		t.Fatal(err)
	}
	if err := wt.Write(stt); err != nil {
		t.Fatal(err)
	}
	if err := we.Write(ete); err != nil {
		t.Fatal(err)
	}
	s1, _ := ws.Close()
	s2, _ := wt.Close()
	s3, _ := we.Close()
	writeManifestForTest(t, dir, map[string]TaskInfo{
		TaskSummarizer:   {Splits: map[string]SplitShards{SplitDev: {Shards: s1}}},
		TaskSumThenTrack: {Splits: map[string]SplitShards{SplitDev: {Shards: s2}}},
		TaskEndToEnd:     {Splits: map[string]SplitShards{SplitDev: {Shards: s3}}},
	})
	for r, err := range ReadShards[SummarizerRow](dir, TaskSummarizer, SplitDev) {
		if err != nil || !reflect.DeepEqual(r, sum) {
			t.Errorf("summarizer: %+v %v", r, err)
		}
	}
	for r, err := range ReadShards[SumThenTrackRow](dir, TaskSumThenTrack, SplitDev) {
		if err != nil || !reflect.DeepEqual(r, stt) {
			t.Errorf("sum_then_track: %+v %v", r, err)
		}
	}
	for r, err := range ReadShards[EndToEndRow](dir, TaskEndToEnd, SplitDev) {
		if err != nil || !reflect.DeepEqual(r, ete) {
			t.Errorf("end_to_end: %+v %v", r, err)
		}
	}
	for _, err := range ReadShards[TrackerRow](dir, TaskEndToEnd, SplitDev) {
		if err == nil || !strings.Contains(err.Error(), "not dataset.TrackerRow") {
			t.Errorf("wrong row type: err = %v", err)
		}
	}
}

func TestReadShardFileCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.parquet")
	if err := os.WriteFile(path, []byte("PAR1 not really a parquet file"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range ReadShardFile[TrackerRow](path) {
		n++
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("err = %v, want one naming %s", err, path)
		}
	}
	if n != 1 {
		t.Errorf("yielded %d times, want 1 error", n)
	}
}

func TestReadManifestSchemaVersion(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), []byte(`{"schema_version": 99}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadManifest(dir); err == nil || !strings.Contains(err.Error(), "schema version") {
		t.Errorf("err = %v", err)
	}
}
