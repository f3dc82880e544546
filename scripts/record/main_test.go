package main

import (
	"encoding/json"
	"testing"
)

// roundTrip is v marshalled to JSON and back into a map, as a CLI would
// read it.
func roundTrip(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
