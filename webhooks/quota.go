package webhooks

// The storage quota of forwarded provider webhooks (IncomingConfig.Forwards
// and MaxForward) counts what each forward delivery costs the database: its
// body and the rest of its row, with the row's index entries. Each forward
// delivery is charged ForwardCharge(len(Body), len(URL)+len(IntegrationKey)+
// len(ConnectionID)) bytes.
//
// The charge was set from measurements on Postgres 15, with
// pg_total_relation_size (table, TOAST and indexes) over hundreds to
// thousands of fresh rows of webhook_deliveries per case, pending,
// delivered and failed, with bodies that do not compress, from empty to
// 64 KiB (and 1 MiB). A row with a tiny body takes 870 to 1,070 bytes with
// a short URL, integration key and connection id, and about 5.6 KB when
// they have the 2,048, 255 and 255 characters allowed (they are in the row
// and in indexes, and a long URL is stored out of line, in 2 KB chunks). A
// body stored in the row costs more than its length (the table's pages
// are filled to 70%, so that updates of a delivery stay on its page); a
// larger one is stored out of line with about 4% more, and up to a chunk
// of slack. Beyond body + body/16, the rows measured took at most 2.6 KB
// with short text and 8.9 KB with the longest: within the charge's
// 4096 + 3 × text bytes. The test TestForwardChargeCoversRowCost of
// store/postgres measures it again.
const (
	// ForwardRowOverhead is the fixed part of a forward delivery's
	// charge: 4 KiB for its row and index entries beyond its body and text.
	ForwardRowOverhead = 4096
	// ForwardBodyDivisor sets the part of the charge that grows with the
	// body: its length and a ForwardBodyDivisor-th of it (6.25% more), for
	// the storage of a large body out of line.
	ForwardBodyDivisor = 16
	// ForwardTextFactor is what each byte of a forward delivery's URL,
	// integration key and connection id is charged: it is stored in the
	// row, in an index or out of line with slack.
	ForwardTextFactor = 3
)

// ForwardCharge returns the bytes that a forward delivery counts against
// its integration's storage quota, for a body of bodyLen bytes and a URL,
// integration key and connection id of textLen bytes together:
//
//	bodyLen + bodyLen/16 + 3·textLen + 4096
//
// (see ForwardBodyDivisor, ForwardTextFactor and ForwardRowOverhead). A
// Store's Pruner sums it over an integration's forward deliveries
// (TrimForwards); [Delivery.ForwardCharge] computes it for a delivery.
func ForwardCharge(bodyLen, textLen int) int64 {
	return int64(bodyLen) + int64(bodyLen)/ForwardBodyDivisor + ForwardTextFactor*int64(textLen) + ForwardRowOverhead
}

// ForwardCharge returns what d counts against its integration's storage
// quota when it is a forward delivery: ForwardCharge of its body and of
// its URL, integration key and connection id.
func (d *Delivery) ForwardCharge() int64 {
	return ForwardCharge(len(d.Body), len(d.URL)+len(d.IntegrationKey)+len(d.ConnectionID))
}
