package ndp

// SetClock replaces the querier's clock for a test and returns a function
// restoring it.
func SetClock(f func() int64) (restore func()) {
	old := nanotime
	nanotime = f
	return func() { nanotime = old }
}
