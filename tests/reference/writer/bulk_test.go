package main

import (
	"strings"
	"testing"
)

// Hostile sizes are refused before anything is connected or written, each in one line naming the flag.
func TestCheckBulkRefusesHostileSizes(t *testing.T) {
	ok := options{entries: 1000, entryBytes: 256 << 10, inFlight: 64}
	if err := checkBulk(ok); err != nil {
		t.Fatalf("the defaults are refused: %v", err)
	}
	cases := []struct {
		name string
		edit func(*options)
		flag string
	}{
		{"zero entries", func(o *options) { o.entries = 0 }, "-entries 0"},
		{"negative entries", func(o *options) { o.entries = -5 }, "-entries -5"},
		{"huge entries", func(o *options) { o.entries = 1 << 40 }, "-entries 1099511627776"},
		{"small entry", func(o *options) { o.entryBytes = 1023 }, "-entry-bytes 1023"},
		{"negative entry", func(o *options) { o.entryBytes = -1 }, "-entry-bytes -1"},
		{"huge entry", func(o *options) { o.entryBytes = 1 << 40 }, "-entry-bytes 1099511627776"},
		{"zero in flight", func(o *options) { o.inFlight = 0 }, "-in-flight 0"},
		{"huge in flight", func(o *options) { o.inFlight = 1 << 30 }, "-in-flight 1073741824"},
		{"too much held", func(o *options) { o.inFlight, o.entryBytes = 1024, 16<<20 }, "holds more than"},
	}
	for _, c := range cases {
		o := ok
		c.edit(&o)
		err := checkBulk(o)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, c.flag) || strings.Contains(msg, "\n") {
			t.Errorf("%s: %q is not one line naming %q", c.name, msg, c.flag)
		}
	}
}
