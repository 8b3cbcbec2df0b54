//! Generates mpi.h from the template and the ABI table. (Placeholder: replaced by the
//! header work.)
pub fn generate_mpi_h(_tsv: &str, tmpl: &str) -> String {
    tmpl.to_string()
}
