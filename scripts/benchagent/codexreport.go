package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/acpbridge/acpbridge/internal/testkit/fakeresponses"
	"github.com/acpbridge/acpbridge/scripts/internal/benchkit"
)

// codexRatios are the ratio columns of the table.
var codexRatios = []benchkit.Ratio{
	{Title: "own/direct", Num: benchkit.NameOwn, Den: nameDirect},
	{Title: "CXT/bridge", Num: nameCXT, Den: benchkit.NameBridge},
	{Title: "CXR/bridge", Num: nameCXR, Den: benchkit.NameBridge},
	{Title: "CXR/cold", Num: nameCXR, Den: benchkit.NameCold},
}

// codexTableNote explains the table's ratios.
const codexTableNote = `
acpbridge is its default flags on a daemon app-server already running (started by a run not counted), as
for every bridge of a user but the first in --shared's time: its memory columns leave the daemon out,
which all of a user's bridges share (its idle memory is below the table). acpbridge-cold is the default
flags with no daemon running, as a user's first bridge of the day: the run starts the daemon (which its
memory leaves out too), and finds the models a run not counted kept in its HOME. acpbridge-own is
--shared=0, an app-server of the bridge's own, each run a new HOME. own/direct is acpbridge's overhead
over codex app-server driven directly (for "agent process alone" it compares acpbridge's own process with
the app-server's). acpbridge answers session/new from the models kept on disk, or, when there are none
(acpbridge-own), from config.toml's model, and its first prompt waits for the server and thread/start: so
compare start → end of turn 1, not its parts. CXT/bridge and CXR/bridge compare each npm adapter with
acpbridge (CXT = @agentclientprotocol/codex-acp, CXR = @zed-industries/codex-acp).
`

// Report prints the notes on the agents, the table of results and what
// each agent's process tree ran.
func (b *codexBench) Report(results map[string][]codexResult) {
	b.noteMissing(results)
	for _, name := range []string{nameCXT, nameCXR} {
		if note := adapterNote(name, results[name], b.codexReal); note != "" {
			fmt.Printf("NOTE: %s\n", note)
		}
		benchkit.NoteLingered(name, results[name])
	}
	fmt.Println()
	benchkit.Table[codexResult]{
		Metrics: benchkit.Metrics(benchkit.Labels{NewSession: "session/new (direct: thread/start)", Child: "codex",
			Matching: "pinned codex", API: "Responses", WallClock: true}),
		Agents:  codexAgentOrder,
		Results: results,
		Ratios:  codexRatios,
		Width:   22,
	}.Print(os.Stdout)
	printOverhead(benchkit.Succeeded(results[benchkit.NameOwn]), benchkit.Succeeded(results[nameDirect]))
	if b.shared.shared != nil {
		b.shared.shared.PrintDaemons(os.Stdout)
	}
	fmt.Print(codexTableNote)
	benchkit.PrintRuns(codexAgentOrder, results, func(r codexResult) []string { return r.userAgents })
	fmt.Println()
}

// noteMissing says which selected agents have no numbers, and why.
func (b *codexBench) noteMissing(results map[string][]codexResult) {
	for _, name := range codexAgentOrder {
		if !b.selected(name) || len(benchkit.Succeeded(results[name])) > 0 {
			continue
		}
		why := b.missing[name]
		if why == "" {
			why = fmt.Sprintf("none of its %d runs succeeded (errors above)", len(results[name]))
		}
		fmt.Printf("NOTE: no numbers for %s: %s. No ratios with it.\n", name, why)
	}
}

// printOverhead prints the differences of medians between the successful
// runs of acpbridge b and those of the app-server driven directly d.
func printOverhead(b, d []codexResult) {
	if len(b) == 0 || len(d) == 0 {
		return
	}
	diff := func(get func(benchkit.Result) float64) float64 {
		return benchkit.MedianOf(b, get) - benchkit.MedianOf(d, get)
	}
	fmt.Printf("\nacpbridge-own − app-server (medians): start → end of turn 1 %+.0f ms, warm turn %+.1f ms, "+
		"peak tree RSS %+.1f MiB, peak tree PSS %+.1f MiB\n",
		diff(func(r benchkit.Result) float64 { return benchkit.Ms(r.EndOfTurn1) }),
		diff(func(r benchkit.Result) float64 { return benchkit.Ms(r.Turn2) }),
		diff(func(r benchkit.Result) float64 { return benchkit.MiB(r.PeakTree) }),
		diff(func(r benchkit.Result) float64 { return benchkit.MiB(r.PeakPSS) }))
}

// adapterNote says how an adapter that ran found codex and reached the
// model: CXT runs the pinned binary, CXR its own linked-in codex-core.
func adapterNote(name string, rs []codexResult, codexReal string) string {
	rs = benchkit.Succeeded(rs)
	switch {
	case len(rs) == 0:
		return ""
	case name == nameCXT:
		return cxtNote(rs, codexReal)
	case name == nameCXR:
		return cxrNote(rs)
	}
	return ""
}

// cxtNote is adapterNote for CXT's successful runs rs.
func cxtNote(rs []codexResult, codexReal string) string {
	var others []string
	ranPinned := 0
	for _, r := range rs {
		others = append(others, r.otherRequests...)
		if slices.Contains(r.Exes, codexReal) {
			ranPinned++
		}
	}
	slices.Sort(others)
	note := fmt.Sprintf("%s (CXT) ran the pinned codex (through CODEX_PATH) in %d of %d successful runs", nameCXT, ranPinned, len(rs))
	if len(others) > 0 {
		note += fmt.Sprintf("; it also made %d Responses requests for another model than %s (a thread title): %s",
			len(others), fakeresponses.Model, strings.Join(slices.Compact(others), "; "))
	}
	return note + "."
}

// cxrNote is adapterNote for CXR's successful runs rs.
func cxrNote(rs []codexResult) string {
	uas := benchkit.Distinct(rs, func(r codexResult) []string { return r.userAgents })
	return fmt.Sprintf("%s (CXR) does not run the pinned codex: it links its own codex-core (its requests' user-agent: %s) and read "+
		"the same CODEX_HOME/config.toml, so it talked to the same fake; but without model_catalog_json, which that codex-core "+
		"cannot parse (\"missing field `base_instructions`\"), so it ran fake-model on its fallback model metadata.",
		nameCXR, strings.Join(uas, "; "))
}
