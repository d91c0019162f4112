package mcptoolset_test

import (
	"context"
	"errors"
	"log"
	"net/http"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// A toolset served behind an authorization server: only its tokens for
// this endpoint get in, and each sees the tools its scopes allow.
func ExampleWithOAuth() {
	ctx := context.Background()
	const issuer, endpoint = "https://login.example.com", "https://tools.example.com/mcp"
	v, err := mcptoolset.NewTokenVerifier(ctx, issuer, endpoint, nil)
	if err != nil {
		log.Fatal(err)
	}
	oauth := &mcptoolset.OAuthConfig{Verifier: v.Verify, AuthorizationServers: []string{issuer}, Resource: endpoint}
	srv := mcptoolset.NewServer(scopedTools(), mcptoolset.WithOAuth(oauth))
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.HTTPHandler(nil))
	mux.Handle(mcptoolset.ProtectedResourceMetadataPath+"/", oauth.MetadataHandler())
	log.Fatal(http.ListenAndServe(":8080", mux))
}

// One remote toolset for every user of an agent: each run calls the
// server as its user, and a user who has not authorized yet is sent to
// the authorization server.
func ExampleWithAuthorization() {
	userID := toolset.NewKey[string]("user_id")
	gh := mcptoolset.NewHTTP("https://mcp.example.com/mcp",
		mcptoolset.WithIdentity(userID),
		mcptoolset.WithAuthorization(&auth.AuthorizationCodeHandlerConfig{
			ClientIDMetadataDocumentConfig: &auth.ClientIDMetadataDocumentConfig{URL: "https://app.example.com/oauth/client.json"},
			RedirectURL:                    "https://app.example.com/oauth/callback",
		}, 0))
	defer gh.Close()

	run := toolset.NewRun("", toolset.WithValue(userID, "alice"))
	defer run.End()
	_, err := toolset.BuildTools(run.Turn(context.Background()), "assistant", gh)
	if are, ok := errors.AsType[*mcptoolset.AuthRequiredError](err); ok {
		log.Printf("ask alice to visit %s", are.URL)
		// Later, at https://app.example.com/oauth/callback?code=...&state=...:
		//	err = gh.CompleteAuthorization(ctx, "alice", &auth.AuthorizationResult{Code: code, State: state, Iss: iss})
	}
}
