// Command racy writes a variable from two goroutines without synchronisation when its
// argument is "race", and with a mutex otherwise: the harness's test of its race check.
package main

import (
	"fmt"
	"os"
	"sync"
)

func main() {
	race := len(os.Args) > 1 && os.Args[1] == "race"
	var (
		mu sync.Mutex
		n  int
		wg sync.WaitGroup
	)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !race {
				mu.Lock()
				defer mu.Unlock()
			}
			n++
		}()
	}
	wg.Wait()
	fmt.Println(n)
}
