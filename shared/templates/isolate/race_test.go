//go:build race

package isolate

// raceEnabled: the race detector makes a child several times slower.
const raceEnabled = true
