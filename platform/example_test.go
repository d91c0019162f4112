package platform_test

import (
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/gotoolset/toolset/platform"
	"github.com/gotoolset/toolset/toolpkg"
)

// A platform for a store, served over HTTP; clients send the bearer
// token.
func ExampleNew() {
	dir, err := os.MkdirTemp("", "platform-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	quiet := slog.New(slog.DiscardHandler)
	store, err := toolpkg.Open(dir, &toolpkg.Options{Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	const token = "example-token-0123456789abcdef"
	srv, err := platform.New(store, &platform.Options{Token: token, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv) // or an http.Server with timeouts
	defer hs.Close()

	req, _ := http.NewRequest("GET", hs.URL+"/api/v1/platform/toolsets", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Println(res.Status)
	fmt.Print(string(body))
	// Output:
	// 200 OK
	// {"data":[],"meta":{"page":1,"pageSize":50,"total":0}}
}
