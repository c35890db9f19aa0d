// Package lint holds checks on lockctl's source that no compiler makes:
// its test, TestRoomSizes, keeps every production file under 700 lines and
// every production function under 80 (issue 29). It is tooling, never
// linked into lockctl.
package lint
