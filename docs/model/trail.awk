# Shorten a counterexample printed by lockctl.pml: keep every event, but of
# each process's scans only the one it acted on (the scan just before its
# "judged" line); the scans that found nothing to do are left out.
{ line[NR] = $0 }
END {
	for (i = 1; i <= NR; i++) {
		l = line[i]
		if (!match(l, /^p[0-9]+: /)) { keep[i] = 1; continue }
		p = substr(l, 1, RLENGTH)
		if (index(l, p "scan begins") == 1) { n[p] = 0; continue }
		if (index(l, p "scan ") == 1) { idx[p, ++n[p]] = i; continue }
		if (index(l, p "judged") == 1) {
			for (j = 1; j <= n[p]; j++) keep[idx[p, j]] = 1
			n[p] = 0
		}
		keep[i] = 1
	}
	for (i = 1; i <= NR; i++) if (keep[i]) print line[i]
}
