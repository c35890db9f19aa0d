package scan

import (
	"path/filepath"
	"strings"

	"github.com/lockctl/lockctl/internal/fsx"
)

// java.util.logging.FileHandler's lock: <log file>.lck, beside the log
// file it guards (the default pattern is %h/java%u.log, so java0.log.lck
// beside java0.log). FileHandler.openFiles names it
// generate(pattern, 0, unique) + ".lck", opens it CREATE_NEW (or, when a
// dead JVM left it, WRITE|APPEND) and holds FileChannel.tryLock() on it,
// which on Linux is fcntl(F_SETLK) on the whole file
// (openjdk/jdk src/java.logging/share/classes/java/util/logging/FileHandler.java;
// src/java.base/unix/native/libnio/ch/UnixFileDispatcherImpl.c). The file is
// empty; the JVM deletes it on a clean close, and a killed one leaves it
// for the next to lock again.
var formatJavaLogging = FormatSpec{
	Name:       "java-logging",
	Producer:   "java.util.logging",
	Room:       "format_java.go",
	Names:      []string{"*.lck"},
	Rule:       "a JVM's FileHandler holds <log>.lck with an fcntl lock while it writes <log>; the empty file's existence means nothing (a killed JVM leaves it, and the next one locks it again).",
	Remedy:     "never removed: live while the kernel shows the lock, free when it shows none.",
	Source:     "openjdk/jdk src/java.logging/share/classes/java/util/logging/FileHandler.java (openFiles); FileChannel.tryLock is fcntl(F_SETLK) on Linux",
	Verdicts:   []string{"live", "free"},
	kernelCall: "fcntl",
	kernelFile: func(d fsx.Dir, path string) bool {
		log, ok := strings.CutSuffix(filepath.Base(path), ".lck")
		if !ok || log == "" {
			return false
		}
		st, err := d.Lstat(log)
		return err == nil && st.Mode.IsRegular()
	},
}
