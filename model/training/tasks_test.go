package training

import (
	"context"
	"testing"

	"github.com/tracksum/tracksum/config"
)

// TestRegister: tasks come back sorted and by name; a duplicate name, a task without Train and a
// cross-validation whose default model is not among its models are refused at registration.
func TestRegister(t *testing.T) {
	train := func(context.Context, *config.Config, Request) error { return nil }
	Register(Task{Name: "zz-test-b", Section: "tracker", Train: train})
	Register(Task{Name: "zz-test-a", Section: "summarizer", Train: train})
	var names []string
	for _, task := range Tasks() {
		if task.Name == "zz-test-a" || task.Name == "zz-test-b" {
			names = append(names, task.Name)
		}
	}
	if len(names) != 2 || names[0] != "zz-test-a" {
		t.Errorf("Tasks() order: %v", names)
	}
	if task, ok := LookupTask("zz-test-b"); !ok || task.Section != "tracker" {
		t.Errorf("LookupTask: %+v %v", task, ok)
	}
	for _, tc := range []struct {
		desc string
		f    func()
	}{
		{"duplicate", func() { Register(Task{Name: "zz-test-a", Section: "tracker", Train: train}) }},
		{"no train", func() { Register(Task{Name: "zz-test-c", Section: "tracker"}) }},
		{"bad default model", func() {
			RegisterCrossValidation(CrossValidation{Task: "zz-test-a", Models: []string{"x"}, DefaultModel: "y", Run: train})
		}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			tc.f()
		})
	}
}
