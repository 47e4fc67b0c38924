package shard

import "strings"

// SlotCount is the number of Redis Cluster hash slots.
const SlotCount = 16384

// Slot returns the Redis Cluster hash slot of key: CRC16 (XMODEM) of the hash
// tag if the key has a non-empty one, of the whole key otherwise, mod 16384.
func Slot(key string) int {
	if s := strings.IndexByte(key, '{'); s >= 0 {
		if e := strings.IndexByte(key[s+1:], '}'); e > 0 {
			key = key[s+1 : s+1+e]
		}
	}
	return int(crc16(key) % SlotCount)
}

func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for j := 0; j < 8; j++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
