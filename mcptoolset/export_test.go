package mcptoolset

// SetMaxPages sets the bound on the pages of one listing, for a test, and
// returns a function that restores it.
func SetMaxPages(n int) (restore func()) {
	old := maxPages
	maxPages = n
	return func() { maxPages = old }
}
