package pipe

import "strconv"

// Path gives the named pipe of process pid. Pipe names are machine-wide; the process id
// keeps the sessions of a terminal server apart.
func Path(pid int) (string, error) {
	return `\\.\pipe\svcpipe.` + strconv.Itoa(pid), nil
}
