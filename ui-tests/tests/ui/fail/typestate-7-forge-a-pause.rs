// Rule 7: a pause cannot be forged: its kinds are made only by the turn scan
// and the decoder.
use toolgate::suspend::AwaitingApproval;

fn main() {
    let _ = AwaitingApproval { _seal: () };
}
