use super::*;

#[test]
fn smoke_sum_double() {
    let a: Vec<u8> = [1.0f64, 2.0, 3.0]
        .iter()
        .flat_map(|x| x.to_ne_bytes())
        .collect();
    let mut b: Vec<u8> = [10.0f64, 20.0, 30.0]
        .iter()
        .flat_map(|x| x.to_ne_bytes())
        .collect();
    apply(&resolve(MPI_SUM).unwrap(), MPI_DOUBLE, &a, &mut b, 3).unwrap();
    let r: Vec<f64> = b
        .chunks(8)
        .map(|c| f64::from_ne_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(r, vec![11.0, 22.0, 33.0]);
    let mut b = vec![0u8; 16];
    let a = vec![0u8; 16];
    assert!(apply(&resolve(MPI_SUM).unwrap(), MPI_LONG_DOUBLE, &a, &mut b, 1).is_ok());
    assert!(apply(&resolve(MPI_SUM).unwrap(), MPI_REAL16, &a, &mut b, 1).is_ok());
}
