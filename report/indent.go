package report

// appendIndent appends src, a compact JSON document as json.Marshal
// writes it, to dst indented as json.Indent would indent it. json.Indent
// runs its full validating scanner over every byte it indents, which was a
// tenth of doctor's time at 20,000 locks; json.Marshal's output needs no
// validating, only its strings skipped, and is copied a run of bytes at a
// time. FuzzAppendIndent holds the two equal on every compact document.
func appendIndent(dst, src []byte, prefix, indent string) []byte {
	depth := 0
	open := false // just after '{' or '[': indent only if an element follows
	newline := func(dst []byte, depth int) []byte {
		dst = append(dst, '\n')
		dst = append(dst, prefix...)
		for range depth {
			dst = append(dst, indent...)
		}
		return dst
	}
	for i := 0; i < len(src); {
		c := src[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			i++
			continue
		}
		if open && c != '}' && c != ']' {
			open = false
			depth++
			dst = newline(dst, depth)
		}
		switch c {
		case '{', '[':
			dst = append(dst, c)
			open = true
			i++
		case ',':
			dst = append(dst, c)
			dst = newline(dst, depth)
			i++
		case ':':
			dst = append(dst, c, ' ')
			i++
		case '}', ']':
			if open {
				open = false // an empty object or array stays on its line
			} else {
				depth--
				dst = newline(dst, depth)
			}
			dst = append(dst, c)
			i++
		case '"':
			j := i + 1
			for j < len(src) && src[j] != '"' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(src))
			dst = append(dst, src[i:j]...)
			i = j
		default: // a number, true, false or null: up to the next delimiter
			j := i + 1
			for j < len(src) && !delimiter(src[j]) {
				j++
			}
			dst = append(dst, src[i:j]...)
			i = j
		}
	}
	return dst
}

func delimiter(c byte) bool {
	switch c {
	case ',', ':', '{', '}', '[', ']', '"', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}
