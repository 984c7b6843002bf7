package config

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// diffFields lists, as dotted config keys, every leaf where a and b differ.
func diffFields(prefix string, a, b reflect.Value) []string {
	if a.Kind() == reflect.Struct && a.Type().String() != "time.Duration" {
		var out []string
		for i := range a.NumField() {
			key := a.Type().Field(i).Tag.Get("mapstructure")
			if prefix != "" {
				key = prefix + "." + key
			}
			out = append(out, diffFields(key, a.Field(i), b.Field(i))...)
		}
		return out
	}
	if !reflect.DeepEqual(a.Interface(), b.Interface()) {
		return []string{fmt.Sprintf("%s: built-in %v, profile %v", prefix, a.Interface(), b.Interface())}
	}
	return nil
}

// TestDefaultsInTwoPlaces is the regression test of issue 10 item 10: without --config the commands
// used built-in defaults that differed from configs/default.yaml (tracker dropout, lexical_l2,
// pos_weight, calibrate, ...). Loading the default profile must yield exactly Default(), in every
// section and every field.
func TestDefaultsInTwoPlaces(t *testing.T) {
	fromFile, err := Load(viper.New(), "../configs/default.yaml", pflag.NewFlagSet("t", pflag.ContinueOnError), nil)
	if err != nil {
		t.Fatal(err)
	}
	builtIn, err := Load(viper.New(), "", pflag.NewFlagSet("t", pflag.ContinueOnError), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := Default(); !reflect.DeepEqual(*builtIn, d) {
		t.Errorf("Load without a file differs from Default(): %v", diffFields("", reflect.ValueOf(d), reflect.ValueOf(*builtIn)))
	}
	for _, d := range diffFields("", reflect.ValueOf(*builtIn), reflect.ValueOf(*fromFile)) {
		t.Errorf("configs/default.yaml and Default() disagree on %s", d)
	}
}
