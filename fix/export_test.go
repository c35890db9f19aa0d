package fix

// WithoutRenameNoReplace makes f claim as on a file system without
// RENAME_NOREPLACE (NFS): by link(2). Tests only.
func WithoutRenameNoReplace(f *Fixer) *Fixer {
	f.noRenameNoReplace = true
	return f
}
