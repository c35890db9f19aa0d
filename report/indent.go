package report

// appendIndent appends src, a compact JSON document as json.Marshal
// writes it, to dst indented as json.Indent would indent it. json.Indent
// runs its full validating scanner over every byte, which was a tenth of
// doctor's time at 20,000 locks; json.Marshal's output needs no
// validating, only the strings skipped. FuzzAppendIndent holds the two
// equal on every valid document.
func appendIndent(dst, src []byte, prefix, indent string) []byte {
	depth := 0
	open := false // just after '{' or '[': indent only if an element follows
	inString, escaped := false, false
	newline := func() {
		dst = append(dst, '\n')
		dst = append(dst, prefix...)
		for range depth {
			dst = append(dst, indent...)
		}
	}
	for _, c := range src {
		if inString {
			dst = append(dst, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			continue
		}
		if open && c != '}' && c != ']' {
			open = false
			depth++
			newline()
		}
		switch c {
		case '"':
			inString = true
			dst = append(dst, c)
		case '{', '[':
			dst = append(dst, c)
			open = true
		case ',':
			dst = append(dst, c)
			newline()
		case ':':
			dst = append(dst, c, ' ')
		case '}', ']':
			if open {
				open = false // an empty object or array stays on its line
			} else {
				depth--
				newline()
			}
			dst = append(dst, c)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
