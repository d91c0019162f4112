package toolpkg

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// outputScript runs a tool inside the bwrap sandbox and then writes the
// files it left in output/ (a tmpfs inside the sandbox, bounded like the
// rest of its writes) as a tar archive to standard output, which is a
// host file bounded by the file size limit. The tool's own standard
// output goes to /dev/null (it is not read for a call) and it never sees
// the archive's descriptor; SIGTERM and SIGINT are passed on to it.
const outputScript = `exec 3>&1 1>/dev/null
"$@" 3>&- &
pid=$!
trap 'kill -TERM $pid 2>/dev/null' TERM
trap 'kill -INT $pid 2>/dev/null' INT
while :; do
  wait $pid
  rc=$?
  kill -0 $pid 2>/dev/null || break
done
tar -c -f - -C output . 2>/dev/null >&3
exit $rc
`

// outputWrapper returns argv run through outputScript.
func outputWrapper(argv []string) []string {
	return append([]string{"/bin/sh", "-c", outputScript, "toolset-output"}, argv...)
}

// readOutputTar reads the archive outputScript wrote at path: the regular
// files at the top of output/, each and all of them bounded, in name
// order. What is refused is said in the notes.
func readOutputTar(path string, ao ArtifactOptions) ([]outputFile, []string) {
	f, err := os.Open(path)
	if err != nil {
		return nil, []string{"the output files could not be read"}
	}
	defer f.Close()
	var out []outputFile
	var notes []string
	var total int64
	tr := tar.NewReader(f)
	for entries := 0; ; entries++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if entries > 0 || !errors.Is(err, io.ErrUnexpectedEOF) {
				notes = append(notes, "the archive of the output files is cut or damaged (the file size limit?); files after it are lost")
			}
			break
		}
		if entries >= ao.MaxArtifacts*4 {
			notes = append(notes, fmt.Sprintf("output directory holds more than %d entries; only the first are looked at", ao.MaxArtifacts*4))
			break
		}
		name := strings.TrimPrefix(h.Name, "./")
		name = strings.TrimSuffix(name, "/")
		if name == "" || name == "." {
			continue
		}
		if strings.Contains(name, "/") {
			continue // inside a subdirectory, which is reported itself
		}
		what := ""
		switch h.Typeflag {
		case tar.TypeReg:
		case tar.TypeSymlink:
			what = "a symbolic link"
		case tar.TypeLink:
			what = "a hard link"
		case tar.TypeFifo:
			what = "a named pipe (FIFO)"
		case tar.TypeDir:
			what = "a directory"
		case tar.TypeChar, tar.TypeBlock:
			what = "a device"
		default:
			what = "not a regular file"
		}
		if err := CheckArtifactName(name); err != nil {
			notes = append(notes, fmt.Sprintf("output file %s skipped: its name is not a valid artifact name", quoteShort(name)))
			continue
		}
		if what != "" {
			notes = append(notes, fmt.Sprintf("output file %s is %s; the host reads only a regular file the tool wrote", name, what))
			continue
		}
		if h.Size > ao.MaxArtifactBytes {
			notes = append(notes, fmt.Sprintf("output file %s is %d bytes; at most %d are read", name, h.Size, ao.MaxArtifactBytes))
			continue
		}
		total += h.Size
		if total > ao.MaxArtifactBytes*4 {
			notes = append(notes, fmt.Sprintf("output file %s skipped: the output files add up to more than %d bytes", quoteShort(name), ao.MaxArtifactBytes*4))
			continue
		}
		data, err := io.ReadAll(io.LimitReader(tr, h.Size))
		if err != nil || int64(len(data)) != h.Size {
			notes = append(notes, fmt.Sprintf("output file %s is cut (the file size limit?)", quoteShort(name)))
			break
		}
		out = append(out, outputFile{name: name, data: data})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, notes
}
