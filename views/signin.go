package views

// SignInForm is what the sign-in page shows: the name typed so far (never
// the password) and, after a failure, one plain message.
type SignInForm struct {
	User  string
	Error string
}
