//! A minimal protobuf wire-format reader: splits a buffer into (field number, value) pairs.
//! It knows nothing about message types; `decode` gives the values their meaning.

/// Why a buffer is not valid protobuf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WireError {
    Truncated,
    VarintTooLong,
    /// Wire types 3 and 4 (groups) are never used by Kubernetes; 6 and 7 do not exist.
    BadWireType(u8),
    BadFieldNumber(u64),
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Truncated => write!(f, "truncated data"),
            WireError::VarintTooLong => write!(f, "varint longer than 10 bytes"),
            WireError::BadWireType(t) => write!(f, "unsupported wire type {t}"),
            WireError::BadFieldNumber(n) => write!(f, "invalid field number {n}"),
        }
    }
}

/// One encoded value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum WireValue<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
}

impl WireValue<'_> {
    pub(crate) fn wire_type(&self) -> u8 {
        match self {
            WireValue::Varint(_) => 0,
            WireValue::Fixed64(_) => 1,
            WireValue::Bytes(_) => 2,
            WireValue::Fixed32(_) => 5,
        }
    }
}

/// Cursor over a protobuf buffer.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub(crate) fn varint(&mut self) -> Result<u64, WireError> {
        let mut value: u64 = 0;
        for i in 0..10 {
            let byte = *self.buf.get(self.pos).ok_or(WireError::Truncated)?;
            self.pos += 1;
            // The tenth byte may only contribute the top bit of a u64.
            if i == 9 && byte > 1 {
                return Err(WireError::VarintTooLong);
            }
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(WireError::VarintTooLong)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end = self.pos.checked_add(n).ok_or(WireError::Truncated)?;
        let out = self.buf.get(self.pos..end).ok_or(WireError::Truncated)?;
        self.pos = end;
        Ok(out)
    }

    fn fixed64(&mut self) -> Result<u64, WireError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    fn fixed32(&mut self) -> Result<u32, WireError> {
        let b = self.take(4)?;
        let mut a = [0u8; 4];
        a.copy_from_slice(b);
        Ok(u32::from_le_bytes(a))
    }

    /// The next field, or `None` at the end of the buffer.
    pub(crate) fn next_field(&mut self) -> Result<Option<(u32, WireValue<'a>)>, WireError> {
        if self.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = key >> 3;
        // Field numbers are 1 ..= 2^29 - 1.
        if number == 0 || number > (1 << 29) - 1 {
            return Err(WireError::BadFieldNumber(number));
        }
        let tag = u32::try_from(number).map_err(|_| WireError::BadFieldNumber(number))?;
        let value = match (key & 7) as u8 {
            0 => WireValue::Varint(self.varint()?),
            1 => WireValue::Fixed64(self.fixed64()?),
            2 => {
                let len = self.varint()?;
                let len = usize::try_from(len).map_err(|_| WireError::Truncated)?;
                WireValue::Bytes(self.take(len)?)
            }
            5 => WireValue::Fixed32(self.fixed32()?),
            other => return Err(WireError::BadWireType(other)),
        };
        Ok(Some((tag, value)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_wire_type() {
        // 1: varint 150, 2: fixed64 1, 3: bytes "hi", 4: fixed32 7
        let buf = [
            0x08, 0x96, 0x01, 0x11, 1, 0, 0, 0, 0, 0, 0, 0, 0x1a, 2, b'h', b'i', 0x25, 7, 0, 0, 0,
        ];
        let mut r = Reader::new(&buf);
        assert_eq!(r.next_field().unwrap(), Some((1, WireValue::Varint(150))));
        assert_eq!(r.next_field().unwrap(), Some((2, WireValue::Fixed64(1))));
        assert_eq!(r.next_field().unwrap(), Some((3, WireValue::Bytes(b"hi"))));
        assert_eq!(r.next_field().unwrap(), Some((4, WireValue::Fixed32(7))));
        assert_eq!(r.next_field().unwrap(), None);
    }

    #[test]
    fn negative_int32_is_a_ten_byte_varint() {
        let buf = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(Reader::new(&buf).varint().unwrap() as i64, -1);
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(
            Reader::new(&[0x0a, 5, b'a']).next_field(),
            Err(WireError::Truncated)
        );
        assert_eq!(Reader::new(&[0x08]).next_field(), Err(WireError::Truncated));
        assert_eq!(
            Reader::new(&[0x08, 0x80]).next_field(),
            Err(WireError::Truncated)
        );
        assert_eq!(
            Reader::new(&[0x0b]).next_field(),
            Err(WireError::BadWireType(3))
        );
        assert_eq!(
            Reader::new(&[0x00, 0x00]).next_field(),
            Err(WireError::BadFieldNumber(0))
        );
        assert_eq!(
            Reader::new(&[0xff; 11]).varint(),
            Err(WireError::VarintTooLong)
        );
        // Length prefix larger than the buffer (and than usize on 32-bit) is truncation.
        let huge = [
            0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
        ];
        assert_eq!(Reader::new(&huge).next_field(), Err(WireError::Truncated));
    }
}
