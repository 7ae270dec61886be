package connections

// AppendFullAnswer is what GET /connections/{id} writes for c.
func AppendFullAnswer(dst []byte, c *Connection, withCredentials, withRefreshToken bool) ([]byte, error) {
	return fullAnswer{c, withCredentials, withRefreshToken}.AppendJSON(dst)
}
