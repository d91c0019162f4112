package provider

// For the tests: the unexported parts they exercise directly.
var (
	Run       = run
	Approving = approving
)

const SchemaCacheSize = schemaCacheSize
