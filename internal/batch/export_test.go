package batch

// Running returns the workers that run or are about to run batches.
func (b *Batcher[K, V]) Running() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.running
}
