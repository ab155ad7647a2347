package oidcprovider

import (
	"context"
	"reflect"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

const redirect = "http://127.0.0.1:1/callback"

var eid = User{ID: "eid-1", Username: "ida", Password: "ida-password", FirstName: "Ida", LastName: "Berg",
	ACR: "idporten-loa-high", Claims: map[string]any{"pid": "01019012345", "groups": []any{"north-staff"}}}

// TestProvider: discovery names the endpoints a relying party needs (RP-initiated logout
// too); the ID token carries the user's further claims and acr; userinfo gives the
// profile; a code is good once and needs its PKCE verifier.
func TestProvider(t *testing.T) {
	p := Start(t, []string{redirect}, eid)
	ctx := context.Background()
	rp, err := oidc.NewProvider(ctx, p.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	var disco struct {
		EndSession string   `json:"end_session_endpoint"`
		Challenge  []string `json:"code_challenge_methods_supported"`
	}
	if err := rp.Claims(&disco); err != nil || disco.EndSession == "" || !reflect.DeepEqual(disco.Challenge, []string{"S256"}) {
		t.Errorf("discovery: end_session_endpoint %q, code_challenge_methods_supported %v (%v), want an endpoint and [S256]", disco.EndSession, disco.Challenge, err)
	}
	cfg := &oauth2.Config{ClientID: ClientWeb, ClientSecret: ClientSecret, Endpoint: rp.Endpoint(), RedirectURL: redirect,
		Scopes: []string{oidc.ScopeOpenID, "profile"}}
	verifier := oauth2.GenerateVerifier()
	code := SignIn(t, cfg.AuthCodeURL("st", oidc.Nonce("n-1"), oauth2.S256ChallengeOption(verifier)), eid.Username, eid.Password).Query().Get("code")

	if _, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(oauth2.GenerateVerifier())); err == nil {
		t.Errorf("code exchanged with another PKCE verifier")
	}
	tok, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	id, err := rp.Verifier(&oidc.Config{ClientID: ClientWeb}).Verify(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		ACR    string   `json:"acr"`
		PID    string   `json:"pid"`
		Groups []string `json:"groups"`
		Nonce  string   `json:"nonce"`
	}
	if err := id.Claims(&claims); err != nil {
		t.Fatal(err)
	}
	if id.Subject != eid.ID || claims.ACR != eid.ACR || claims.PID != "01019012345" || !reflect.DeepEqual(claims.Groups, []string{"north-staff"}) || claims.Nonce != "n-1" {
		t.Errorf("ID token: sub %q, claims %+v, want sub %s, acr %s, pid, groups [north-staff], nonce n-1", id.Subject, claims, eid.ID, eid.ACR)
	}
	info, err := rp.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		t.Fatal(err)
	}
	var profile struct {
		Given  string `json:"given_name"`
		Family string `json:"family_name"`
	}
	if err := info.Claims(&profile); err != nil || profile.Given != "Ida" || profile.Family != "Berg" {
		t.Errorf("userinfo names = %+v (%v), want Ida Berg", profile, err)
	}
	if _, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(verifier)); err == nil {
		t.Errorf("code exchanged twice")
	}
}
