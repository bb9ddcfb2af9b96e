//! Just enough DER to rewrite the subject of a certificate rcgen produced.
//!
//! Why this exists: Kubernetes reads a client certificate's groups from *every* `O` attribute
//! of the subject, but rcgen 0.14 keeps a distinguished name as a map with one value per
//! attribute type (rcgen issue #81), so it cannot express `CN=jane, O=dev, O=ops`. We let rcgen
//! build and sign the certificate, swap in a subject we encode ourselves, and sign the
//! to-be-signed part again with the CA key.

/// One parsed element: its tag, the whole encoding, and the content octets.
pub(crate) struct Element<'a> {
    pub tag: u8,
    pub whole: &'a [u8],
    pub content: &'a [u8],
}

/// Reads the element at the start of `input`; returns it and the remaining bytes.
/// Only single-byte tags and definite lengths, which is all X.509 uses at the levels we touch.
pub(crate) fn read_element(input: &[u8]) -> Result<(Element<'_>, &[u8]), String> {
    let (&tag, rest) = input.split_first().ok_or("unexpected end of data")?;
    if tag & 0x1f == 0x1f {
        return Err("multi-byte tags are not supported".into());
    }
    let (&first, rest) = rest.split_first().ok_or("missing length")?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 {
            return Err(format!("unsupported length encoding 0x{first:02x}"));
        }
        if rest.len() < count {
            return Err("truncated length".into());
        }
        let (len_bytes, rest) = rest.split_at(count);
        let len = len_bytes
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        (len, rest)
    };
    if rest.len() < len {
        return Err("element longer than the data".into());
    }
    let header_len = input.len() - rest.len();
    let whole = &input[..header_len + len];
    let content = &rest[..len];
    Ok((
        Element {
            tag,
            whole,
            content,
        },
        &rest[len..],
    ))
}

/// Splits the content of a constructed element into its children.
pub(crate) fn children(content: &[u8]) -> Result<Vec<Element<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = content;
    while !rest.is_empty() {
        let (element, next) = read_element(rest)?;
        out.push(element);
        rest = next;
    }
    Ok(out)
}

/// Encodes one element from its tag and content.
pub(crate) fn encode(tag: u8, content: &[u8]) -> Vec<u8> {
    let len = content.len();
    let mut out = Vec::with_capacity(content.len() + 6);
    out.push(tag);
    if len < 0x80 {
        // Fits in the short form; the cast cannot truncate.
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|&&b| b == 0).count();
        let significant = &bytes[skip..];
        out.push(0x80 | significant.len() as u8);
        out.extend_from_slice(significant);
    }
    out.extend_from_slice(content);
    out
}

pub(crate) const TAG_SEQUENCE: u8 = 0x30;
const TAG_SET: u8 = 0x31;
const TAG_UTF8_STRING: u8 = 0x0c;
pub(crate) const TAG_BIT_STRING: u8 = 0x03;

/// id-at-commonName (2.5.4.3), encoded as an OBJECT IDENTIFIER element.
const OID_COMMON_NAME: [u8; 5] = [0x06, 0x03, 0x55, 0x04, 0x03];
/// id-at-organizationName (2.5.4.10), encoded as an OBJECT IDENTIFIER element.
const OID_ORGANIZATION: [u8; 5] = [0x06, 0x03, 0x55, 0x04, 0x0a];

/// Encodes the Name `CN=<common_name>, O=<org>...`, each attribute in its own RDN, values as
/// UTF8String.
pub(crate) fn encode_name(common_name: &str, organizations: &[String]) -> Vec<u8> {
    let attribute = |oid: &[u8], value: &str| {
        let mut atv = oid.to_vec();
        atv.extend(encode(TAG_UTF8_STRING, value.as_bytes()));
        encode(TAG_SET, &encode(TAG_SEQUENCE, &atv))
    };
    let mut rdns = attribute(&OID_COMMON_NAME, common_name);
    for org in organizations {
        rdns.extend(attribute(&OID_ORGANIZATION, org));
    }
    encode(TAG_SEQUENCE, &rdns)
}

/// Returns a copy of `cert_der` with the subject replaced by `subject_der`, re-signed by `sign`
/// (which must produce a signature for the algorithm already named in the certificate).
pub(crate) fn replace_subject(
    cert_der: &[u8],
    subject_der: &[u8],
    sign: impl FnOnce(&[u8]) -> Result<Vec<u8>, String>,
) -> Result<Vec<u8>, String> {
    let (cert, trailing) = read_element(cert_der)?;
    if cert.tag != TAG_SEQUENCE || !trailing.is_empty() {
        return Err("not a single DER certificate".into());
    }
    let parts = children(cert.content)?;
    let [tbs, signature_algorithm, _signature] = parts.as_slice() else {
        return Err("certificate does not have three parts".into());
    };
    let tbs_fields = children(tbs.content)?;
    // TBSCertificate: [0] version, serialNumber, signature, issuer, validity, subject, ...
    // rcgen always writes the explicit version, so the subject is the sixth field.
    if tbs_fields.first().map(|f| f.tag) != Some(0xa0) || tbs_fields.len() < 7 {
        return Err("unexpected TBSCertificate layout".into());
    }
    let mut new_tbs_content = Vec::with_capacity(tbs.content.len() + subject_der.len());
    for (index, field) in tbs_fields.iter().enumerate() {
        if index == 5 {
            new_tbs_content.extend_from_slice(subject_der);
        } else {
            new_tbs_content.extend_from_slice(field.whole);
        }
    }
    let new_tbs = encode(TAG_SEQUENCE, &new_tbs_content);
    let signature = sign(&new_tbs)?;
    let mut bit_string = Vec::with_capacity(signature.len() + 1);
    bit_string.push(0); // no unused bits
    bit_string.extend(signature);
    let mut cert_content = new_tbs;
    cert_content.extend_from_slice(signature_algorithm.whole);
    cert_content.extend(encode(TAG_BIT_STRING, &bit_string));
    Ok(encode(TAG_SEQUENCE, &cert_content))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_round_trip_in_short_and_long_form() {
        for len in [0usize, 1, 127, 128, 255, 256, 70_000] {
            let content = vec![0xab; len];
            let encoded = encode(0x04, &content);
            let (element, rest) = read_element(&encoded).unwrap();
            assert!(rest.is_empty());
            assert_eq!(element.tag, 0x04);
            assert_eq!(element.content.len(), len);
            assert_eq!(element.whole.len(), encoded.len());
        }
        assert_eq!(encode(0x04, &[0; 128])[..3], [0x04, 0x81, 0x80]);
    }

    #[test]
    fn truncated_input_is_an_error() {
        assert!(read_element(&[0x30, 0x05, 0x01]).is_err());
        assert!(read_element(&[0x30]).is_err());
        assert!(read_element(&[0x30, 0x82, 0x01]).is_err());
    }

    #[test]
    fn name_encodes_every_organization() {
        let name = encode_name("jane", &["dev".into(), "ops".into()]);
        use x509_parser::prelude::FromDer;
        let parsed = x509_parser::x509::X509Name::from_der(&name).unwrap().1;
        let orgs: Vec<_> = parsed
            .iter_organization()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(orgs, ["dev", "ops"]);
        let cn: Vec<_> = parsed
            .iter_common_name()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(cn, ["jane"]);
    }
}
