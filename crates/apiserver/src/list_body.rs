//! The body of a JSON List response: its head, the items' stored bytes separated by commas,
//! and the closing brackets, handed to the connection in pieces of about [`PIECE`] bytes as
//! it takes them.
//!
//! A list is not assembled in one buffer first. For 5,000 Clusters that buffer was 38 MB:
//! fresh pages to fault in and clear at every LIST (a third of the server's CPU for it) and
//! 30 ms before the first byte left, while the pieces here are small enough to be reused by
//! the allocator, and the first one goes out at once.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{BufMut, Bytes, BytesMut};
use http_body::{Frame, SizeHint};

/// The size a piece is filled up to: several TLS records, small enough to stay in cache.
const PIECE: usize = 64 * 1024;

const TAIL: &[u8] = b"]}";

/// `head` + items joined by `,` + `]}`; the exact length is known up front (so the response
/// carries a Content-Length).
pub struct JsonList {
    head: Option<Bytes>,
    items: Vec<Bytes>,
    /// The next item to write.
    next: usize,
    /// Bytes not yet handed out.
    remaining: u64,
}

impl JsonList {
    /// `head` ends with the opening bracket of `items` (`{...,"items":[`).
    pub fn new(head: Bytes, items: Vec<Bytes>) -> Self {
        let separators = items.len().saturating_sub(1);
        let total =
            head.len() + items.iter().map(Bytes::len).sum::<usize>() + separators + TAIL.len();
        Self {
            head: Some(head),
            items,
            next: 0,
            remaining: total as u64,
        }
    }

    /// The next piece: whole items up to [`PIECE`] bytes (an item larger than that alone).
    fn next_piece(&mut self) -> Option<Bytes> {
        if self.remaining == 0 {
            return None;
        }
        let room = usize::try_from(self.remaining)
            .unwrap_or(usize::MAX)
            .min(PIECE);
        let mut buf = BytesMut::with_capacity(room);
        if let Some(head) = self.head.take() {
            buf.put_slice(&head);
        }
        while let Some(item) = self.items.get(self.next) {
            let separator = usize::from(self.next > 0);
            if !buf.is_empty() && buf.len() + separator + item.len() > PIECE {
                break;
            }
            if separator == 1 {
                buf.put_u8(b',');
            }
            buf.put_slice(item);
            self.next += 1;
        }
        if self.next == self.items.len() && (buf.is_empty() || buf.len() + TAIL.len() <= PIECE) {
            buf.put_slice(TAIL);
        }
        self.remaining -= buf.len() as u64;
        Some(buf.freeze())
    }
}

impl http_body::Body for JsonList {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.get_mut().next_piece().map(|b| Ok(Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body::Body as _;
    use http_body_util::BodyExt;

    fn items(sizes: &[usize]) -> Vec<Bytes> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let filler = "x".repeat(n.saturating_sub(18));
                Bytes::from(format!("{{\"n\":\"{i:03}\",\"f\":\"{filler}\"}}"))
            })
            .collect()
    }

    /// Every piece, checking the size hint against what is left before each.
    async fn pieces(mut body: JsonList) -> Vec<Bytes> {
        let mut out = Vec::new();
        loop {
            let left: u64 = body.size_hint().exact().unwrap();
            assert_eq!(body.is_end_stream(), left == 0);
            let Some(frame) = body.frame().await else {
                assert_eq!(left, 0, "the body ended early");
                return out;
            };
            let data = frame.unwrap().into_data().unwrap();
            assert_eq!(body.size_hint().exact().unwrap(), left - data.len() as u64);
            out.push(data);
        }
    }

    fn joined(head: &str, items: &[Bytes]) -> Vec<u8> {
        let mut want = head.as_bytes().to_vec();
        for (i, it) in items.iter().enumerate() {
            if i > 0 {
                want.push(b',');
            }
            want.extend_from_slice(it);
        }
        want.extend_from_slice(TAIL);
        want
    }

    #[tokio::test]
    async fn pieces_join_into_the_list_and_stay_near_the_piece_size() {
        let head = "{\"kind\":\"ClusterList\",\"items\":[";
        for sizes in [
            vec![],
            vec![40],
            vec![7_000; 100],
            // an item larger than a piece goes alone
            vec![100, PIECE * 2, 100],
            // items filling a piece exactly, then the tail on its own
            vec![PIECE - head.len(), PIECE - 1],
        ] {
            let list = items(&sizes);
            let got = pieces(JsonList::new(Bytes::from(head), list.clone())).await;
            let all: Vec<u8> = got.iter().flat_map(|b| b.iter().copied()).collect();
            assert_eq!(all, joined(head, &list), "sizes {sizes:?}");
            let value: serde_json::Value = serde_json::from_slice(&all).unwrap();
            assert_eq!(value["items"].as_array().unwrap().len(), sizes.len());
            for piece in &got {
                let alone = list
                    .iter()
                    .any(|it| it.len() > PIECE && piece.len() <= it.len() + 1);
                assert!(piece.len() <= PIECE || alone, "a piece of {}", piece.len());
                assert!(!piece.is_empty());
            }
        }
    }

    #[tokio::test]
    async fn a_list_of_many_items_comes_in_many_pieces() {
        let list = items(&[7_000; 100]);
        let got = pieces(JsonList::new(Bytes::from_static(b"{\"items\":["), list)).await;
        // 700 KB in pieces of up to 64 KiB: whole items, so nine per piece.
        assert_eq!(got.len(), 100usize.div_ceil(9));
    }
}
