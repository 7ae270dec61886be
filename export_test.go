package connect

import "time"

// ProxyCacheTTL returns the TTL in force in the proxy's connection cache:
// Config.ProxyCacheMaxAge while the Service follows the Store's change
// feed, Config.ProxyCacheTTL otherwise.
func ProxyCacheTTL(s *Service) time.Duration { return s.proxyCache.TTL() }
